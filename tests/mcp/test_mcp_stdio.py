"""`rag-hub mcp` through the MCP SDK's own stdio client: on the store in its own process when no
hub runs, and relayed to a running hub's /mcp (RAG_URL, RAG_KEY) when one does. A key is the same
key either way: the same collections, the same tools, the same refusals."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from rag_api.access.keys import KeysFile
from rag_api.hub import Hub
from rag_api.settings import Settings
from tests.conftest import REPO, cli_env, free_port, hash_collection, run_cli, write_config
from tests.support.migration_world import write_api

pytestmark = pytest.mark.slow  # each test runs `rag-hub mcp` processes over stdio

READER = "reader-secret"
WRITES = {"upsert_document", "remove_document"}


@pytest.fixture
def indexed(workspace: dict[str, str]) -> dict[str, str]:
    assert run_cli("index", env=workspace).returncode == 0
    return workspace


def over_stdio(
    env: dict[str, str], steps: Callable[[ClientSession], Awaitable[Any]], errlog: Any = sys.stderr
) -> Any:
    """`steps` on a session with `rag-hub mcp` launched as a desktop client launches it (its
    stderr, the client's log, to `errlog`)."""

    async def main() -> Any:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "rag_api", "mcp"], env=cli_env(env), cwd=str(REPO)
        )
        async with (
            stdio_client(params, errlog) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            return await steps(mcp)

    return asyncio.run(main())


async def first_found(mcp: ClientSession) -> str:
    result = await mcp.call_tool("search", {"query": "refund days", "collection": "docs"})
    assert not result.is_error, result.content
    data: Any = result.structured_content
    return data["results"][0]["source"]


def first_source(env: dict[str, str]) -> str:
    async def steps(mcp: ClientSession) -> str:
        await mcp.initialize()
        return await first_found(mcp)

    return over_stdio(env, steps)


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


def test_a_relay_whose_hub_is_down_says_so_and_goes_on_once_it_is_up(indexed, serve) -> None:
    """The hub down at RAG_URL: each request gets a JSON-RPC error naming the server and what to
    do (not a crash the client sees as "connection closed"); once the hub is up, the same
    session works."""
    port = free_port()
    settings = Settings(
        config=Path(indexed["RAG_CONFIG"]), data_dir=Path(indexed["RAG_DATA_DIR"]),
        ollama_url="http://127.0.0.1:9",
    )  # fmt: skip

    async def steps(mcp: ClientSession) -> str:
        for _ in range(2):  # the relay reads on after an error
            with pytest.raises(MCPError) as down:
                await mcp.initialize()
        said = down.value.error.message
        assert said.startswith(
            f"UPSTREAM_UNAVAILABLE: the rag-hub server at http://127.0.0.1:{port}"
        )
        assert "rag-hub serve" in said and "RAG_URL" in said, said
        serve(settings, port=port)
        await mcp.initialize()
        return await first_found(mcp)

    env = {**indexed, "RAG_URL": f"http://127.0.0.1:{port}"}
    assert over_stdio(env, steps) == "faq.md"


@pytest.fixture
def two_collections(tmp_path: Path) -> dict[str, Any]:
    """docs and notes indexed, and a key that reads docs only (no hub running)."""
    folders = {"docs": "Refunds are possible within 30 days of purchase.",
               "notes": "The refund desk opens at nine."}  # fmt: skip
    entries = {}
    for name, text in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "faq.md").write_text(f"# {name}\n\n{text}\n")
        entries[name] = hash_collection(tmp_path / name)
    config = write_config(tmp_path / "collections.yaml", entries)
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}
    assert run_cli("index", env=env).returncode == 0
    settings = Settings(config=config, data_dir=tmp_path / "data", ollama_url="http://127.0.0.1:9")
    reader = KeysFile(settings.keys_path).create("docs reader", ["docs"], [])[1]
    return {"env": env, "settings": settings, "reader": reader}


async def what_the_key_gets(mcp: ClientSession) -> dict[str, Any]:
    await mcp.initialize()
    tools = {tool.name for tool in (await mcp.list_tools()).tools}
    listed: Any = (await mcp.call_tool("list_collections", {})).structured_content
    found = await mcp.call_tool("search", {"query": "refund", "collection": "docs"})
    hidden = await mcp.call_tool("search", {"query": "refund", "collection": "notes"})
    wrote = await mcp.call_tool(
        "upsert_document", {"collection": "docs", "source": "n.md", "text": "A note."}
    )
    return {
        "tools": tools,
        "collections": [c["name"] for c in listed["collections"]],
        "found": not found.is_error,
        "hidden": hidden.content[0].text.partition(":")[0],
        "wrote": wrote.is_error and wrote.content[0].text.partition(":")[0],
    }


@pytest.mark.parametrize("hub_running", [False, True], ids=["in-process", "relayed"])
def test_a_key_has_the_same_scope_whether_a_hub_runs_or_not(
    two_collections, serve, hub_running
) -> None:
    """A key that reads docs only: never notes, no write tools, no write, with or without a hub
    (rag-hub mcp on the store it opened used to serve everything to any key)."""
    env = {**two_collections["env"], "RAG_KEY": two_collections["reader"]}
    if hub_running:
        env["RAG_URL"] = serve(two_collections["settings"]).url
    assert over_stdio(env, what_the_key_gets) == {
        "tools": {"search", "fetch", "list_collections", "answer"},
        "collections": ["docs"],
        "found": True,
        "hidden": "COLLECTION_NOT_FOUND",
        "wrote": "FORBIDDEN",
    }


def test_in_process_a_writer_key_writes_where_it_may_and_the_audit_names_it(
    two_collections, tmp_path
) -> None:
    settings: Settings = two_collections["settings"]
    writer = KeysFile(settings.keys_path).create("notes bot", ["docs"], ["notes"])[1]

    async def steps(mcp: ClientSession) -> list[Any]:
        await mcp.initialize()
        assert WRITES <= {tool.name for tool in (await mcp.list_tools()).tools}
        wrote = await mcp.call_tool(
            "upsert_document", {"collection": "notes", "source": "n.md", "text": "A note."}
        )
        refused = await mcp.call_tool(
            "upsert_document", {"collection": "docs", "source": "n.md", "text": "A note."}
        )
        return [wrote.structured_content, refused.content[0].text]

    with (tmp_path / "client.log").open("w+") as log:
        wrote, refused = over_stdio({**two_collections["env"], "RAG_KEY": writer}, steps, log)
        log.seek(0)
        audited = [line for line in log if "rag_api.audit" in line]
    assert len(wrote["ids"]) == 1 and wrote["ids"][0].startswith("notes:n.md#")
    assert refused == "FORBIDDEN: this key may read 'docs' but may not change it"
    assert len(audited) == 1 and "(notes bot) rag-hub mcp: upsert/document on notes" in audited[0]


def test_in_process_a_key_the_hub_does_not_know_or_none_stops_the_command(
    two_collections,
) -> None:
    """Where keys are set, rag-hub mcp on its own store starts only with one of them: one line,
    exit 1, before anything is served (with no key set at all it serves everything, as the
    server does: test_stdio_opens_the_store_when_no_hub_runs)."""
    env = two_collections["env"]
    for args, extra, said in (
        ([], {"RAG_KEY": "rk_wrong"},
         "the key in RAG_KEY (or rag-hub --key) is not one this hub knows"),
        (["--key", "rk_wrong"], {}, "the key in --key is not one this hub knows"),
        ([], {}, "this hub has keys (1 scoped key(s) in"),
        ([], {"RAG_API_KEY": "global"}, None),  # RAG_API_KEY is the key when none other is given
    ):  # fmt: skip
        done = run_cli("mcp", *args, env={**env, **extra})
        if said is None:
            assert done.returncode == 0, done.stderr
            continue
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {said}"), done.stderr
        assert done.stdout == ""
