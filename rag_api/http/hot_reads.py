"""The read routes every client waits on, served in one layer in front of the others, with
the same checks as the routes behind it (docs/architecture.md, "The hot reads"). A route is one
of them where it is declared (`@hot(...)` under its decorator); its path and body model are the
route's own, read from the app."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_api.errors import RagError
from rag_api.http.auth import authorize, bearer_token
from rag_api.http.error_responses import crash_response, rag_error_response
from rag_api.http.json_body import NOT_JSON, UNLABELLED, checked, read_body, replay
from rag_api.http.openai_errors import app_routes
from rag_api.http.read_threads import ReadThreads
from rag_api.http.request_log import Tracked

# as many reads at once as Starlette's own thread pool allows (anyio's default limiter)
WORKERS = 40
JSON_LABELS = UNLABELLED | {b"application/json"}  # what JsonBodies lets through as JSON
F = TypeVar("F", bound=Callable[..., Any])


Work = Callable[[Any, Any, str | None], Response]  # (hub, body, the path parameter or None)


@dataclass(frozen=True)
class Hot:
    """What marks a route as a hot read: its work (in a worker thread) and which bodies it takes
    (the others go to the route)."""

    work: Work
    takes: Callable[[Any], bool] = lambda body: True


def hot(work: Work, takes: Callable[[Any], bool] = lambda body: True) -> Callable[[F], F]:
    """Mark the POST route declared above as a hot read (its path: at most one `{param}`, last)."""

    def mark(endpoint: F) -> F:
        endpoint.__hot__ = Hot(work, takes)  # type: ignore[attr-defined]
        return endpoint

    return mark


@dataclass(frozen=True)
class HotRead:
    """A marked route as this layer serves it."""

    route: APIRoute
    body: type[BaseModel]
    work: Work
    takes: Callable[[Any], bool]


class HotReads:
    """Serves the plain requests of the app's marked routes (with bodies of at most `max_bytes`,
    the BodyLimit of these paths); passes everything else to the app."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exact: dict[str, HotRead] = {}
        self.prefixed: list[tuple[str, HotRead]] = []
        self.known = False  # the table is read from the app at its first request
        self.workers = ReadThreads(WORKERS, "rag-read")

    def _learn(self, app: Any) -> None:
        """The marked routes of `app`: their paths and body models as declared."""
        for route in app_routes({"app": app}):
            mark = getattr(getattr(route, "endpoint", None), "__hot__", None)
            if not isinstance(route, APIRoute) or mark is None or route.body_field is None:
                continue
            read = HotRead(route, route.body_field.field_info.annotation, mark.work, mark.takes)
            if "{" in route.path:
                self.prefixed.append((route.path.split("{")[0], read))
            else:
                self.exact[route.path] = read
        self.known = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        if not self.known and "app" in scope:
            self._learn(scope["app"])
        found = self._match(scope)
        if found is None:
            await self.app(scope, receive, send)
            return
        read, param, request_id = found
        body = await read_body(receive)
        accepted = self._accepted(scope, read, body)
        if accepted is None:
            await self.app(scope, replay(body, receive), send)
            return
        hub, parsed = accepted
        scope["route"] = read.route  # what the router would have put there
        request = Tracked(request_id, started)
        status = 500  # what the server answers when the work fails unexpectedly
        try:
            try:
                response = await self.workers.run(read.work, hub, parsed, param)
            except RagError as exc:
                response = rag_error_response(Request(scope), exc)
            except Exception as exc:  # a bug: its 500 names this request, like any error
                response = crash_response(scope, exc)
            status = response.status_code
            headers = request.headers(response.raw_headers)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": response.body})
        finally:
            request.done(scope, status)

    def _match(self, scope: Scope) -> tuple[HotRead, str | None, bytes] | None:
        """(the read, its path parameter, the X-Request-ID header) when this request is a POST
        to one, with a JSON body of a Content-Length within the limit."""
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
        label, length, request_id = b"", b"", b""
        for name, value in scope["headers"]:
            if name == b"content-type":
                label = value
            elif name == b"content-length":
                length = value
            elif name == b"x-request-id":
                request_id = value
            elif name == b"transfer-encoding":
                return None
        if not length.isdigit() or int(length) > self.max_bytes:
            return None
        if label.split(b";")[0].strip().lower() not in JSON_LABELS:
            return None
        return read, param, request_id

    def _accepted(self, scope: Scope, read: HotRead, body: bytes) -> tuple[Any, BaseModel] | None:
        """(the hub, the body as `read` takes it), or None when the other layers or the route
        must answer. Accepted, the request's grant is set as the route's would be (the worker
        runs in a copy of this context)."""
        hub = scope["app"].state.hub
        if hub is None:
            return None
        request = Request(scope)
        principal = hub.keyring.known(bearer_token(request))
        if principal is None:
            return None
        document, problem = checked(body)
        if document is NOT_JSON or problem is not None:
            return None
        try:
            parsed = read.body.model_validate(document)
        except ValidationError:  # a body the route refuses with a 422
            return None
        if not read.takes(parsed):
            return None
        try:
            authorize(request, principal, "read")
        except RagError:  # the route refuses it, with its own body and log line
            return None
        return hub, parsed
