"""Request body size limit, enforced before the body is parsed (413 in the route's error shape)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_api.http.error_responses import render_error


class BodyLimit:
    """Refuses bodies over `max_bytes`: by Content-Length up front, else while they stream in
    (a request whose Content-Length is within the limit passes untouched: no wrapper on its
    receive and send, which every read would otherwise pay for)."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, wider: Mapping[re.Pattern[str], int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.wider = dict(wider or {})  # paths that take larger bodies (file uploads): their limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope["path"])
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                await self._refuse(scope, receive, send, limit)
                return
            if b"transfer-encoding" not in headers:
                # the server reads exactly Content-Length bytes: nothing more can stream in
                await self.app(scope, receive, send)
                return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge(self._message(limit))
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send, limit)

    def _limit(self, path: str) -> int:
        return next((n for pattern, n in self.wider.items() if pattern.match(path)), self.max_bytes)

    def _message(self, limit: int) -> str:
        return f"request body is larger than the {limit} byte limit"

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = render_error(scope, 413, "PAYLOAD_TOO_LARGE", self._message(limit))
        await response(scope, receive, send)


class _TooLarge(HTTPException):
    """Raised while the route reads the body; FastAPI lets HTTPExceptions through to the handlers."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message)
