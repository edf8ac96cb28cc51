"""`rag-hub mcp`: the MCP tools over stdio, for desktop clients that launch a command (Claude
Desktop, Cursor): through the running hub when one answers (RAG_URL, else where this store's
server listens), else on the store opened in this process. Either way the key (--key, RAG_KEY,
else RAG_API_KEY) is the hub's to judge: the server judges it on each request, and in this
process the hub's keyring does as the server would (rag_api.mcp.local)."""

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

    from rag_api.cli.ops_client import OpsClient
    from rag_api.hub import Hub
    from rag_api.mcp.local import LocalKey
    from rag_api.mcp.relay import relay
    from rag_api.mcp.tools import build_tools
    from rag_api.observability.logs import apply_log_level

    given = "--key" if key else "RAG_KEY (or rag-hub --key)" if settings.key else "RAG_API_KEY"
    key = key or settings.key or settings.api_key
    server = OpsClient(settings, admin=False)
    if url or server.serves(settings):
        advice = (
            "Start it (rag-hub serve), or leave RAG_URL and --url unset for rag-hub mcp to open "
            "the store in its own process"
            if url
            else "Start it again (rag-hub serve), or restart rag-hub mcp to open the store itself"
        )
        relay((url or server.url).rstrip("/") + "/mcp", key, advice)
        return
    hub = Hub.open(settings)
    try:
        local = LocalKey(hub.keyring, key, given)  # refuses before anything is served
        apply_log_level(settings.log_level)  # on stderr, the client's log: the writes' audit
        hub.load_models()
        tools = build_tools(
            lambda: hub,
            lambda ctx: local.principal(),
            writes=bool(local.first.write),
            route="rag-hub mcp",
            base_of=lambda ctx: settings.public_url,  # no server here: links only to a public one
        )
        anyio.run(tools.run_stdio_async)
    finally:
        hub.close()
