"""Request body size limit, enforced before the body is parsed (413 in the route's error shape)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_api.api_errors import render_error


class BodyLimit:
    """Refuses bodies over `max_bytes`: by Content-Length up front, else while they stream in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self._message())
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    def _message(self) -> str:
        return f"request body is larger than the {self.max_bytes} byte limit"

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = render_error(scope, 413, "PAYLOAD_TOO_LARGE", self._message())
        await response(scope, receive, send)


class _TooLarge(HTTPException):
    """Raised while the route reads the body; FastAPI lets HTTPExceptions through to the handlers."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message)
