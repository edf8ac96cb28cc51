"""The OpenAI error shape on the OpenAI routes: {"error": {"message", "type", "param", "code"}}.

SDKs raise their usual exceptions from it (BadRequestError, AuthenticationError, NotFoundError).
Codes are the hub's stable codes in lower case, except `invalid_api_key` for a missing or wrong
key; invalid requests are 400 as on OpenAI (422 on the hub's other routes). The OpenAI router's
routes are `OpenAIRoute`s: the app's error handlers render an error the way its route says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

Headers = dict[str, str] | None  # an error response's extra headers (WWW-Authenticate on a 401)


_CODES = {"UNAUTHORIZED": "invalid_api_key"}


def openai_error_response(
    status: int, code: str, message: str, param: str | None = None, headers: Headers = None
) -> JSONResponse:
    """An error in OpenAI's shape; `param` names the field (`messages[0].content`)."""
    if code == "INVALID_REQUEST":
        status = 400
    error = {
        "message": message,
        "type": "server_error" if status >= 500 else "invalid_request_error",
        "param": re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", param) if param else None,
        "code": _CODES.get(code, code.lower()),
    }
    return JSONResponse({"error": error}, status_code=status, headers=headers)


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str  # invalid_request_error, or server_error for 5xx
    param: str | None
    code: str


class OpenAIErrorBody(BaseModel):
    error: OpenAIErrorDetail


class OpenAIRoute(APIRoute):
    """A route whose errors take OpenAI's shape (the route_class of http/endpoints/openai.py's router):
    rendered so by the app's error handlers, and documented so in /openapi.json."""

    render_error = staticmethod(openai_error_response)

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        errors = {
            status: {"model": OpenAIErrorBody, "description": "An error in OpenAI's shape"}
            for status in ("4XX", "5XX")
        }
        options["responses"] = {**(options.get("responses") or {}), **errors}
        super().__init__(path, endpoint, **options)


def app_routes(scope: Scope) -> list[BaseRoute]:
    """Every route of the app serving `scope` (none outside one), those of its included routers
    in their place: what the error handlers match a request against when it failed before
    routing."""
    app = scope.get("app")
    return list(_flat(app.router.routes)) if app is not None else []


def _flat(routes: list[BaseRoute]) -> Iterator[BaseRoute]:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's included router
        yield from _flat(included.routes) if included is not None else (route,)


class UnknownOpenAIPath:
    """Where no route matches: a path under /v1/ outside the hub's own /v1 families (`/v1/rag`,
    `/v1/ops`, `/v1/collections`, ... taken from the app's routes) is an OpenAI client's guess at
    an endpoint the hub lacks (`/v1/audio/speech`, `/v1/files`), so its 404 takes OpenAI's shape.
    The error handlers match an unrouted request against it after the app's routes
    (rag_api.http.error_responses.route_of); it routes nothing."""

    render_error = staticmethod(openai_error_response)

    def matches(self, scope: Scope) -> tuple[Match, dict[str, Any]]:
        parts = scope.get("path", "").split("/")
        if len(parts) > 1 and parts[1] == "v1":
            if len(parts) == 2 or parts[2] not in _hub_families(app_routes(scope)):
                return Match.FULL, {}
        return Match.NONE, {}


def _hub_families(routes: list[BaseRoute]) -> set[str]:
    return {
        parts[2]
        for route in routes
        if not isinstance(route, OpenAIRoute)
        and len(parts := getattr(route, "path", "").split("/")) > 2
        and parts[1] == "v1"
    }


UNKNOWN_OPENAI_PATH = UnknownOpenAIPath()  # stateless
