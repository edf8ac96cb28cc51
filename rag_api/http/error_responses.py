"""One JSON shape for every error the HTTP API returns: {"error": {"code", "message"}}."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from rag_api.errors import RagError
from rag_api.http.oauth import challenge
from rag_api.http.openai_errors import UNKNOWN_OPENAI_PATH, Headers, app_routes
from rag_api.observability.request_context import request_id

log = logging.getLogger("rag_api.http")
_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE"}


class ErrorDetail(BaseModel):
    code: str  # stable, e.g. COLLECTION_NOT_FOUND
    message: str
    request_id: str | None = None  # the id the request log gave this request


class ErrorBody(BaseModel):
    error: ErrorDetail


# how /openapi.json documents every route's errors (the OpenAI routes document their own shape)
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": "An error in the one shape"}
    for status in ("4XX", "5XX")
}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The one error shape; inside a request it names the request's id (for its log lines)."""
    rid = request_id()
    return {
        "error": {"code": code, "message": message, **extra, **({"request_id": rid} if rid else {})}
    }


def error_response(status: int, code: str, message: str, headers: Headers = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def render_error(
    scope: Scope,
    status: int,
    code: str,
    message: str,
    *,
    param: str | None = None,
    headers: Headers = None,
) -> JSONResponse:
    """An error for the request of `scope`: the one shape, or the shape its route renders (OpenAI's
    on the OpenAI routes, so SDKs raise their usual exceptions)."""
    render = getattr(route_of(scope), "render_error", None)
    if render is not None:
        return render(status, code, message, param, headers)
    return error_response(status, code, message, headers)


def route_of(scope: Scope) -> BaseRoute | None:
    """The route the router recorded in the scope; for a request refused before routing (the body
    checks) or a crash seen by the outermost handler (which holds the scope from before routing),
    the app's route that matches it, else UNKNOWN_OPENAI_PATH for a path under /v1/ it lacks."""
    route = scope.get("route")
    if route is None:
        candidates = (*app_routes(scope), UNKNOWN_OPENAI_PATH)
        route = next((r for r in candidates if r.matches(scope)[0] is not Match.NONE), None)
    return route


def describe_validation(exc: RequestValidationError) -> tuple[str, str | None]:
    """A readable sentence naming each invalid field, and the first field's name."""
    parts = []
    first: str | None = None
    for error in exc.errors():
        loc = [str(p) for p in error.get("loc", ())]
        where = loc.pop(0) if loc and loc[0] in ("body", "query", "path", "header") else "body"
        name = ".".join(loc) or where
        message = error.get("msg", "invalid").removeprefix("Value error, ")
        if error.get("type") == "json_invalid":
            name, message = "body", "invalid JSON"
        elif name == "body" and error.get("type") == "missing":
            message = "a JSON request body is required"
        first = first or name
        parts.append(f"{name}: {message}")
    return "; ".join(parts) or "invalid request", first


def rag_error_response(request: Request, exc: RagError) -> JSONResponse:
    """A domain error of `request`, in its route's shape (a server-side one is logged)."""
    if exc.status >= 500:
        log.warning("%s %s -> %s: %s", request.method, request.url.path, exc.code, exc.message)
    offer = challenge(request, exc)  # a 401's, or a token's insufficient scope
    headers = {**(exc.headers or {}), "WWW-Authenticate": offer} if offer else exc.headers
    return render_error(
        request.scope, exc.status, exc.code, exc.message, param=exc.param, headers=headers
    )


def install_error_handlers(app: FastAPI) -> None:
    """Render RagError, validation errors, HTTP errors and crashes in the one shape."""

    @app.exception_handler(RagError)
    async def _rag_error(request: Request, exc: RagError) -> JSONResponse:
        return rag_error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, field = describe_validation(exc)
        return render_error(request.scope, 422, "INVALID_REQUEST", message, param=field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.method} {request.url.path}"
        headers = exc.headers
        if exc.status_code == 405:  # RFC 9110: Allow names the methods the path does take
            headers = {**(headers or {}), "Allow": allowed_methods(request.scope)}
        return render_error(request.scope, exc.status_code, code, message, headers=headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        return crash_response(request.scope, exc)


def allowed_methods(scope: Scope) -> str:
    """The methods of every route on the request's path (Starlette's own Allow names only the
    first route's: GET and POST of /v1/collections/{c}/files are two routes)."""
    routes = app_routes(scope)
    return ", ".join(
        sorted(
            {
                method
                for route in routes
                if getattr(route, "methods", None) and route.matches(scope)[0] is Match.PARTIAL
                for method in route.methods
            }
        )
    )


def crash_response(scope: Scope, exc: Exception) -> JSONResponse:
    """A bug's 500 (logged with its traceback) in the route's shape. rag_api.http.request_log renders
    it inside the request's context, so body and log line carry the request's id; the app's
    outermost handler (above) only sees what escapes that."""
    log.error("unhandled error on %s %s", scope["method"], scope["path"], exc_info=exc)
    return render_error(scope, 500, "INTERNAL_ERROR", f"internal error: {type(exc).__name__}")
