"""`rag-hub mcp` through the MCP SDK's own stdio client: on the store in its own process when no
hub runs, and relayed to a running hub's /mcp (RAG_URL, RAG_KEY) when one does."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from rag_api.hub import Hub
from rag_api.settings import Settings
from tests.conftest import REPO, cli_env, hash_collection, run_cli, write_config
from tests.support.migration_world import write_api

READER = "reader-secret"


@pytest.fixture
def indexed(workspace: dict[str, str]) -> dict[str, str]:
    assert run_cli("index", env=workspace).returncode == 0
    return workspace


def first_source(env: dict[str, str]) -> str:
    async def main() -> str:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "rag_api", "mcp"], env=cli_env(env), cwd=str(REPO)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            result = await mcp.call_tool("search", {"query": "refund days", "collection": "docs"})
            assert not result.is_error, result.content
            data: Any = result.structured_content
            return data["results"][0]["source"]

    return asyncio.run(main())


def test_stdio_opens_the_store_when_no_hub_runs(indexed) -> None:
    assert first_source(indexed) == "faq.md"


def test_stdio_relays_to_a_running_hub(indexed, serve) -> None:
    settings = Settings(
        config=Path(indexed["RAG_CONFIG"]), data_dir=Path(indexed["RAG_DATA_DIR"]),
        api_key=READER, ollama_url="http://127.0.0.1:9",
    )  # fmt: skip
    server = serve(settings)  # owns the embedded store: the command must go through it
    env = {**indexed, "RAG_URL": server.url, "RAG_KEY": READER}
    assert first_source(env) == "faq.md"
    refused = {**indexed, "RAG_URL": server.url, "RAG_KEY": "wrong"}
    with pytest.raises(BaseException) as caught:  # the SDK raises inside its task group
        first_source(refused)
    assert any("bearer" in str(e) for e in leaves(caught.value))


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def test_a_hub_of_another_store_on_the_port_is_not_relayed_to(indexed, serve, tmp_path) -> None:
    """Another hub listening on RAG_PORT (a second hub on the machine) serves another store:
    the command answers from its own store, not from that hub's collections."""
    other = tmp_path / "other"
    other.mkdir()
    config = write_config(other / "collections.yaml", {"docs": hash_collection()})
    settings = Settings(config=config, data_dir=other / "data", ollama_url="http://127.0.0.1:9")
    hub = Hub.open(settings)
    write_api(hub.collection("docs"), range(0, 3), 2, " refund days")
    foreign = serve(settings, hub)
    assert first_source({**indexed, "RAG_PORT": str(foreign.port)}) == "faq.md"
