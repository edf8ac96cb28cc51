"""/mcp on the running server: Streamable HTTP, stateless and answered in JSON (SSE where the
client asks for it), so a client works whichever replica it reaches. The bearer key is checked
as on every route — where keys are set, none is a 401 with `WWW-Authenticate` — and the tools
run with its grant (rag_api.mcp.tools). Two tool servers: a key that may write somewhere reaches
the one that offers the write tools, any other the one without them, so `tools/list` offers
each caller what it may use."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
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
        # by whether the key may write somewhere: with the write tools, or without them
        self.servers = {
            writes: build_tools(self._hub, _principal, writes, base_of=self._base)
            for writes in (True, False)
        }
        for server in self.servers.values():
            server.streamable_http_app(  # makes the session manager; the routing is ours
                stateless_http=True,
                json_response=True,
                max_request_body_size=MAX_BYTES,
                # the keys guard the hub; behind a load balancer the Host is not the hub's own
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
        self.transports = {
            writes: StreamableHTTPASGIApp(server.session_manager)
            for writes, server in self.servers.items()
        }

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in self.servers.values():
                await stack.enter_async_context(server.session_manager.run())
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
        await self.transports[bool(principal.write)](scope, receive, send)

    def _base(self, ctx: Context) -> str:
        """Where people reach the hub: RAG_PUBLIC_URL, else the request's own base URL."""
        request = ctx.request_context.request
        public = self._hub().settings.public_url
        return public or str(getattr(request, "base_url", "")) or "/"

    def _hub(self) -> Hub:
        hub = self.app.state.hub
        if hub is None:
            raise NotReady("the hub is starting: store and models are not open yet")
        return hub


def _principal(ctx: Context) -> Principal | None:
    request = ctx.request_context.request
    return getattr(request, "scope", {}).get(PRINCIPAL)
