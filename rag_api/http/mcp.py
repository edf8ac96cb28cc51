"""/mcp on the running server: Streamable HTTP, stateless and answered in JSON (SSE where the
client asks for it), so a client works whichever replica it reaches. The bearer key is checked
as on every route — where keys are set, none is a 401 with `WWW-Authenticate` — and the tools
run with its grant (rag_api.mcp.tools)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from rag_api.access.grant import Principal
from rag_api.errors import NotReady, RagError, Unauthorized
from rag_api.http.auth import principal_of
from rag_api.http.error_responses import rag_error_response
from rag_api.hub import Hub
from rag_api.mcp.tools import build_tools

PATH = "/mcp"
MAX_BYTES = 16 << 20  # a tool's over-long argument is its own error, not the transport's
PRINCIPAL = "rag.principal"  # where the request's scope carries who calls


class McpEndpoint:
    """The ASGI app behind `PATH`; `running()` is its part of the app's lifespan."""

    def __init__(self, app: Any) -> None:
        self.app = app  # the FastAPI app: its hub is the one to serve
        self.server = build_tools(self._hub, _principal)
        self.server.streamable_http_app(  # makes the session manager; the routing is ours
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_BYTES,
            # the keys guard the hub; behind a load balancer the Host is not the hub's own
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.transport = StreamableHTTPASGIApp(self.server.session_manager)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            principal = await principal_of(request, self._hub().keyring)
            if principal is None:
                raise Unauthorized("missing or invalid bearer token (Authorization: Bearer <key>)")
        except RagError as exc:
            await rag_error_response(request, exc)(scope, receive, send)
            return
        scope[PRINCIPAL] = principal
        await self.transport(scope, receive, send)

    def _hub(self) -> Hub:
        hub = self.app.state.hub
        if hub is None:
            raise NotReady("the hub is starting: store and models are not open yet")
        return hub


def _principal(ctx: Context) -> Principal | None:
    request = ctx.request_context.request
    return getattr(request, "scope", {}).get(PRINCIPAL)
