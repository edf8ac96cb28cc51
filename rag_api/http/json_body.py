"""Every request body of this API is JSON: `curl -d '{...}'` (which labels it a form) works too,
and a body that Python's parser accepts but nothing downstream can hold is refused up front."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_api.http.error_responses import render_error
from rag_api.metadata import MAX_DEPTH, value_problem

# What a client sends when it did not say: curl -d, a bare HTML form post, or no header at all.
UNLABELLED = {b"", b"application/x-www-form-urlencoded", b"text/plain"}
NOT_JSON = object()  # a body that is not JSON (the route's own parser reports it)


class JsonBodies:
    """Relabels an unlabelled request body as JSON before routing; no route here takes a form
    (file uploads are multipart, passed through untouched).
    A body that is not JSON then gets the usual 422 in the one error shape. A JSON body holding
    what no route can use (nesting past MAX_DEPTH, a lone surrogate, NaN or Infinity, an integer
    beyond 64 bits) is refused here in the route's error shape, before any route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        label = dict(scope["headers"]).get(b"content-type", b"")
        kind = label.split(b";")[0].strip().lower()
        if kind == b"multipart/form-data":  # a file upload: streamed to its route, never held here
            await self.app(scope, receive, send)
            return
        if kind in UNLABELLED:
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            headers.append((b"content-type", b"application/json"))
            scope = {**scope, "headers": headers}
        body = await read_body(receive)
        document, problem = checked(body)
        if problem is not None:
            field, message = problem
            response = render_error(scope, 422, "INVALID_REQUEST", message, param=field)
            await response(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)


def checked(body: bytes) -> tuple[Any, tuple[str, str] | None]:
    """The parsed body (NOT_JSON when it is not JSON at all: the route's own parser reports it),
    and (field, message) when it is JSON that no route can hold."""
    if not body.strip():
        return NOT_JSON, None
    try:
        document = json.loads(body)
    except RecursionError:
        return NOT_JSON, ("body", f"body: nested more than {MAX_DEPTH} levels deep")
    except ValueError:
        return NOT_JSON, None
    return document, value_problem(document)


async def read_body(receive: Receive) -> bytes:
    """The whole request body (its messages joined)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """The body once, then the client's own messages (a disconnect during a streamed answer)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
