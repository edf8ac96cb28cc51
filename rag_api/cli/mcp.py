"""`rag-hub mcp`: the MCP tools over stdio, for desktop clients that launch a command (Claude
Desktop, Cursor): through the running hub when one answers (RAG_URL, else where this store's
server listens; the key RAG_KEY, else RAG_API_KEY), else on the store opened in this process."""

from __future__ import annotations

import click

from rag_api.cli.common import domain_errors
from rag_api.settings import Settings


@click.command("mcp")
@click.option("--url", envvar="RAG_URL", help="A running hub's base URL (default: this store's).")
@click.option(
    "--key", help="The bearer key to use (default: rag-hub's --key, RAG_KEY, RAG_API_KEY)."
)
@click.pass_obj
@domain_errors
def mcp_command(settings: Settings, url: str | None, key: str | None) -> None:
    """Serve the MCP tools on stdin/stdout (docs/mcp.md)."""
    import anyio

    from rag_api.access.grant import OPEN
    from rag_api.cli.ops_client import OpsClient
    from rag_api.hub import Hub
    from rag_api.mcp.relay import relay
    from rag_api.mcp.tools import build_tools

    server = OpsClient(settings, admin=False)
    if url or server.serves(settings):
        relay((url or server.url).rstrip("/") + "/mcp", key or settings.key or settings.api_key)
        return
    hub = Hub.open(settings)
    try:
        hub.load_models()
        tools = build_tools(lambda: hub, lambda ctx: OPEN)  # this process owns the store
        anyio.run(tools.run_stdio_async)
    finally:
        hub.close()
