"""The read routes every client waits on, served in one layer in front of the others, with
the same checks as the routes behind it (docs/architecture.md, "The hot reads")."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.responses import Response
from starlette.routing import BaseRoute
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
    """Serves the plain requests of `reads` (with bodies of at most `max_bytes`, the BodyLimit of
    these paths); passes everything else to the app."""

    def __init__(self, app: ASGIApp, reads: tuple[HotRead, ...], max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exact = {read.template: read for read in reads if "{" not in read.template}
        self.prefixed = [
            (read.template.split("{")[0], read) for read in reads if "{" in read.template
        ]
        self.routes: dict[str, BaseRoute] = {}  # template -> the app's route, found once
        self.workers = ReadThreads(WORKERS, "rag-read")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
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
        scope["route"] = self._route(scope["app"], read.template)
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

    def _route(self, app: Any, template: str) -> BaseRoute:
        """The app's POST route for `template` (what the router would have put in the scope)."""
        route = self.routes.get(template)
        if route is None:
            route = next(
                r
                for r in app_routes({"app": app})
                if getattr(r, "path", None) == template and "POST" in getattr(r, "methods", ())
            )
            self.routes[template] = route
        return route
