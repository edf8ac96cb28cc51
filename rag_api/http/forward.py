"""A reader sends writes to the writer (docs/scaling.md): every request that changes something, or
that reads what only the writer holds (jobs, the indexer, uploads' state, operations), goes to
RAG_WRITER_URL as it came (the caller's key included) and its answer streams back, so clients
keep one base URL behind a load balancer. A writer that cannot be reached, or that stops
answering for RAG_WRITER_TIMEOUT_S, is a 503 WRITER_UNAVAILABLE naming it; reads go on."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_api.errors import WriterUnavailable, redact
from rag_api.http.error_responses import render_error

log = logging.getLogger("rag_api.http.forward")
# the reads a reader answers itself though they are POSTs: questions and searches
LOCAL_POSTS = re.compile(
    r"^/(v1/)?(chat/completions|responses|embeddings)$|^/query/[^/]+$"
    r"|^/v1/rag/(search|context|chunks/list)$|^/v1/ops/migrate/plan$"
    r"|^/v1/collections/[^/]+/eval$|^/mcp$"
)
# what only the writer holds, whatever the method: its jobs, its folder watcher, the state of its
# uploads and sources, and operations
WRITER_PATHS = re.compile(
    r"^/v1/(jobs|ops|indexer)(/|$)|^/v1/collections/[^/]+/(files|sources)(/|$)"
)
HOP_BY_HOP = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"}


def forwarded(method: str, path: str) -> bool:
    """Whether a reader sends this request to the writer."""
    if WRITER_PATHS.match(path):
        return True
    if method in ("GET", "HEAD", "OPTIONS"):
        return False
    if method == "DELETE" and re.match(r"^/(v1/)?responses/|^/mcp$", path):
        return False  # stored responses are shared (rag_api.replicas.shared_responses)
    return not LOCAL_POSTS.match(path)


class ToWriter:
    """ASGI middleware of a reader (RAG_ROLE=reader)."""

    def __init__(self, app: ASGIApp, writer_url: str, timeout_s: float) -> None:
        self.app = app
        self.writer = writer_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0))
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not forwarded(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        query = scope.get("query_string", b"").decode("latin-1")
        request = self._client.build_request(
            scope["method"],
            self.writer
            + scope.get("root_path", "")
            + scope["path"]
            + (f"?{query}" if query else ""),
            headers=[(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP],
            content=_body(receive),
        )
        started = False
        try:
            response = await self._client.send(request, stream=True)
            try:
                headers = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": headers,
                    }  # fmt: skip
                )
                started = True
                async for piece in response.aiter_raw():
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            if started:  # the answer was cut short: the caller sees the connection end
                log.warning("the writer's answer to %s was cut short: %s", scope["path"], exc)
                raise
            error = WriterUnavailable(
                f"the writer at {redact(self.writer)}", str(exc) or type(exc).__name__
            )
            response = render_error(scope, error.status, error.code, error.message)
            await response(scope, receive, send)


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        yield message.get("body", b"")
        if not message.get("more_body"):
            return
