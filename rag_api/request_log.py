"""Per request: an id (X-Request-ID, echoed), one log line, and the HTTP metrics. Pure ASGI."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_api.metrics import HTTP_LATENCY, HTTP_REQUESTS
from rag_api.request_context import RequestContext, current, request_id_from

log = logging.getLogger("rag_api.access")
UNMATCHED = "<unmatched>"  # a path no route serves: one label, not one per path


class RequestLog:
    """Outermost middleware: sets the request context, then logs and counts the finished request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"")
        context = RequestContext(request_id_from(header.decode("latin-1")))
        token = current.set(context)
        started = time.perf_counter()
        status = 500  # what the server answers when the app fails before a response

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", context.request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)
            _record(scope, status, time.perf_counter() - started, context)


def _record(scope: Scope, status: int, elapsed: float, context: RequestContext) -> None:
    """Count the finished request and log its line."""
    route = getattr(scope.get("route"), "path", UNMATCHED)
    HTTP_REQUESTS.labels(route, scope["method"], f"{status // 100}xx").inc()
    HTTP_LATENCY.labels(route, context.collection).observe(elapsed)
    if not log.isEnabledFor(logging.INFO):
        return  # the line is most of this layer's cost
    # The record made directly, not by log.info(): that walks the stack to find the calling line
    # (a third of the line's cost), which no log format here shows; this is the caller anyway.
    args = (
        scope["method"],
        scope["path"],
        status,
        elapsed * 1000,
        f" collection={context.collection}" if context.collection else "",
    )
    record = log.makeRecord(
        log.name,
        logging.INFO,
        __file__,
        0,
        "%s %s %d %.1f ms%s",
        args,
        None,
        "_record",
        extra={
            "method": scope["method"],
            "route": route,
            "path": scope["path"],
            "status": status,
            "latency_ms": round(elapsed * 1000, 3),
            "collection": context.collection or None,
            "request_id": context.request_id,
        },
    )
    log.handle(record)
