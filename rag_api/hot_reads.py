"""The read routes every client waits on, served without FastAPI's per-request machinery.

`POST /query/{collection}` (generate=false), `/v1/rag/search` and `/v1/rag/context` are what the
voice pipeline and retrieval-only clients call once a turn. FastAPI spends ~0.5 ms of event-loop
time on each (routing through every route, solving dependencies, validating the body, wrapping the
endpoint) — more than the rest of the HTTP layer. This middleware, the innermost of ours (after
the body checks, inside the request log and its metrics), serves the plain case of those routes
itself: the same reader check, the same body model, the same work in a worker thread and the
same bytes (rag_api.routes.declared), the route recorded in the scope for the log line and the
metrics. Anything else — a query string, a body the model refuses, a missing key, the hub still
opening, a streamed or generated answer — goes on to FastAPI untouched (the body replayed), so
every error keeps the shape and message it had. A domain error raised by the work itself (an
unknown collection) is rendered by the handler FastAPI would have used.

The work goes to threads of this layer's own (rag_api.read_threads, the request's context copied
along) rather than Starlette's run_in_threadpool: anyio's hop adds its capacity limiter, cancel
scope and checkpoints (a bare uvicorn app answering over loopback on this 2-core machine: 0.72 ms
with anyio's hop, 0.64 ms with asyncio's executor hop; less again with read_threads'). The body is parsed once: JsonBodies hands on
the document it checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_api.api_errors import rag_error_response
from rag_api.auth import is_reader
from rag_api.errors import RagError
from rag_api.json_body import NOT_JSON, parsed_body, read_body, replay
from rag_api.read_threads import ReadThreads

# as many reads at once as Starlette's own thread pool allows (anyio's default limiter)
WORKERS = 40


@dataclass(frozen=True)
class HotRead:
    """A read route this layer may serve: its path template (at most one `{param}`, last), its
    body model, the work (in a worker thread: hub, body, the path parameter or None) and which
    bodies it takes (the others go to the route)."""

    template: str
    body: type[BaseModel]
    work: Callable[[Any, Any, str | None], Response]
    takes: Callable[[Any], bool] = lambda body: True


class HotReads:
    """Serves the plain requests of `reads`; passes everything else to the app."""

    def __init__(self, app: ASGIApp, reads: tuple[HotRead, ...]) -> None:
        self.app = app
        self.exact = {read.template: read for read in reads if "{" not in read.template}
        self.prefixed = [
            (read.template.split("{")[0], read) for read in reads if "{" in read.template
        ]
        self.routes: dict[str, BaseRoute] = {}  # template -> the app's route, found once
        self.workers = ReadThreads(WORKERS, "rag-read")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self._match(scope)
        if found is None:
            await self.app(scope, receive, send)
            return
        read, param = found
        body = await read_body(receive)
        response = await self._serve(scope, read, param, body)
        if response is None:
            await self.app(scope, replay(body, receive), send)
            return
        await response(scope, receive, send)

    def _match(self, scope: Scope) -> tuple[HotRead, str | None] | None:
        """The read this request asks for, when it is a plain JSON POST to one."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope.get("query_string"):
            return None
        path = scope["path"]
        read = self.exact.get(path)
        param = None
        if read is None:
            for prefix, candidate in self.prefixed:
                rest = path[len(prefix) :]
                if path.startswith(prefix) and rest and "/" not in rest:
                    read, param = candidate, rest
                    break
            else:
                return None
        label = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
        if label.split(b";")[0].strip().lower() != b"application/json":
            return None
        return read, param

    async def _serve(
        self, scope: Scope, read: HotRead, param: str | None, body: bytes
    ) -> Response | None:
        """The answer, or None when the route must serve this request itself."""
        request = Request(scope)
        hub = getattr(request.app.state, "hub", None)
        if hub is None or not is_reader(request):
            return None
        document = parsed_body(scope, body)
        if document is NOT_JSON:
            return None
        try:
            parsed = read.body.model_validate(document)
        except ValidationError:  # a body the route refuses with a 422
            return None
        if not read.takes(parsed):
            return None
        scope["route"] = self._route(request, read.template)
        try:  # in a copy of the request's context: its id and collection, as the route sees
            return await self.workers.run(read.work, hub, parsed, param)
        except RagError as exc:
            return rag_error_response(request, exc)

    def _route(self, request: Request, template: str) -> BaseRoute:
        """The app's POST route for `template` (what the router would have put in the scope)."""
        route = self.routes.get(template)
        if route is None:
            route = next(
                r
                for r in request.app.state.routes
                if getattr(r, "path", None) == template and "POST" in getattr(r, "methods", ())
            )
            self.routes[template] = route
        return route
