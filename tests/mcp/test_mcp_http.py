"""/mcp through the MCP SDK's own client (ClientSession over Streamable HTTP) against the real
app under uvicorn on loopback, on both engines: the tools each key is offered, their schemas and
annotations, their answers, and bad arguments in the hub's words."""

from __future__ import annotations

import asyncio
import html
import json
import logging
import re
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rag_api.access.keys import KeysFile
from tests.conftest import assert_error_shape, hash_collection, write_config

ADMIN, READER = "admin-secret", "reader-secret"
READS = {"search", "fetch", "list_collections", "answer"}
WRITES = {"upsert_document", "remove_document"}


@pytest.fixture(params=["edge", "memory"])
def hub_url(request, tmp_path: Path, make_settings, serve) -> dict[str, Any]:
    folders = {"docs": "Refunds are possible within 30 days of purchase.",
               "soporte": "Las devoluciones se aceptan durante 30 días."}  # fmt: skip
    entries = {}
    for name, text in folders.items():
        kb = tmp_path / name
        kb.mkdir()
        (kb / "faq.md").write_text(f"# {name}\n\n{text}\n")
        (kb / "other.md").write_text("# Shipping\n\nParcels leave the warehouse on Mondays.\n")
        entries[name] = hash_collection(kb, language="es" if name == "soporte" else "en")
    config = write_config(tmp_path / "collections.yaml", entries)
    settings = make_settings(config, request.param, api_key=READER, admin_api_key=ADMIN)
    scoped = KeysFile(settings.keys_path).create("notes bot", ["soporte"], ["soporte"])[1]
    server = serve(settings)
    for name in folders:
        reload = httpx.post(f"{server.url}/v1/rag/reload", json={"collection": name},
                            headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)  # fmt: skip
        assert reload.status_code == 200, reload.text
    return {"url": server.url + "/mcp", "scoped": scoped, "server": server}


@asynccontextmanager
async def session(url: str, key: str):
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as opened:
                await opened.initialize()
                yield opened


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return (
        result.structured_content
        if result.structured_content
        else json.loads(result.content[0].text)
    )


def error(result: Any) -> str:
    assert result.is_error, result
    return result.content[0].text


def test_tools_search_fetch_answer_and_list(hub_url) -> None:
    async def main() -> None:
        async with session(hub_url["url"], READER) as mcp:
            found = data(
                await mcp.call_tool("search", {"query": "refund days", "collection": "docs"})
            )
            first = found["results"][0]
            assert first["source"] == "faq.md" and first["collection"] == "docs"
            fetched = data(await mcp.call_tool("fetch", {"id": first["id"]}))
            assert "30 days" in fetched["text"]
            # a kb file has no address of its own: `url` is the passage's page, which opens
            # without a key (the link is signed) and shows that passage
            server_url = hub_url["server"].url
            assert first["url"].startswith(server_url + "/passages/") and fetched["url"]
            page = httpx.get(first["url"])
            assert page.status_code == 200 and first["id"] in page.text and "30 days" in page.text
            document = data(await mcp.call_tool("fetch", {"id": "docs:faq.md"}))
            assert document["chunks"] >= 1 and "30 days" in document["text"]
            only = data(await mcp.call_tool(
                "search", {"query": "refund days warehouse Mondays", "collection": "docs",
                           "sources": ["other.md"]}))  # fmt: skip
            assert {r["source"] for r in only["results"]} == {"other.md"}
            both = data(await mcp.call_tool(
                "search", {"query": "refund days warehouse Mondays", "collection": "docs"}))  # fmt: skip
            assert {r["source"] for r in both["results"]} == {"faq.md", "other.md"}
            answer = data(await mcp.call_tool("answer", {"question": "How many days for a refund?",
                                                         "collection": "docs"}))  # fmt: skip
            assert "30" in answer["answer"] and answer["sources"]
            assert answer["collection"] == "docs" and answer["searched"] == ["docs"]
            listed = data(await mcp.call_tool("list_collections", {}))
            assert {c["name"] for c in listed["collections"]} == {"docs", "soporte"}

    asyncio.run(main())


def test_a_scoped_key_sees_only_its_collections_and_writes_only_there(hub_url, caplog) -> None:
    caplog.set_level(logging.INFO, logger="rag_api.audit")

    async def main() -> None:
        async with session(hub_url["url"], READER) as reader:
            docs_id = data(await reader.call_tool("search", {"query": "refund", "collection": "docs"}))[
                "results"][0]["id"]  # fmt: skip
            refused = await reader.call_tool(
                "upsert_document", {"collection": "docs", "source": "n.md", "text": "a note"}
            )
            assert error(refused).startswith(
                "FORBIDDEN: upsert_document needs a key that may write"
            )
        async with session(hub_url["url"], hub_url["scoped"]) as scoped:
            listed = data(await scoped.call_tool("list_collections", {}))
            assert [c["name"] for c in listed["collections"]] == ["soporte"]
            hidden = await scoped.call_tool("fetch", {"id": docs_id})
            assert error(hidden).startswith("COLLECTION_NOT_FOUND: ")
            other = await scoped.call_tool("search", {"query": "refund", "collection": "docs"})
            assert error(other).startswith("COLLECTION_NOT_FOUND: ")
            elsewhere = await scoped.call_tool(
                "upsert_document", {"collection": "docs", "source": "n.md", "text": "a note"}
            )
            assert error(elsewhere).startswith("COLLECTION_NOT_FOUND: ")
            wrote = data(await scoped.call_tool(
                "upsert_document", {"collection": "soporte", "source": "notas.md",
                                    "text": "El cliente prefiere el correo."}))  # fmt: skip
            assert wrote["added"] == 1 and len(wrote["ids"]) == 1
            fetched = data(await scoped.call_tool("fetch", {"id": wrote["ids"][0]}))
            assert fetched["text"] == "El cliente prefiere el correo."
            found = data(
                await scoped.call_tool("search", {"query": "correo", "collection": "soporte"})
            )
            assert found["results"][0]["id"] == wrote["ids"][0]
            removed = data(await scoped.call_tool(
                "remove_document", {"collection": "soporte", "source": "notas.md"}))  # fmt: skip
            assert removed["removed"] == 1

    asyncio.run(main())
    audited = [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"]
    # each names the route: every tool call is a POST to /mcp
    assert any("(notes bot) POST /mcp: upsert/document on soporte" in line for line in audited)
    assert any("(notes bot) POST /mcp: remove on soporte" in line for line in audited)
    assert not any("upsert/document on docs" in line for line in audited)  # refused: nothing


def test_each_key_is_offered_the_tools_it_may_use_typed_and_annotated(hub_url) -> None:
    """A key that may write somewhere is offered the write tools, any other is not; every
    argument is typed and described, every tool declares its answer and its annotations."""

    async def offered(key: str) -> dict[str, Any]:
        async with session(hub_url["url"], key) as mcp:
            return {tool.name: tool for tool in (await mcp.list_tools()).tools}

    assert set(asyncio.run(offered(READER))) == READS  # RAG_API_KEY beside an admin key reads
    assert set(asyncio.run(offered(hub_url["scoped"]))) == READS | WRITES
    tools = asyncio.run(offered(ADMIN))
    assert set(tools) == READS | WRITES
    for name, tool in tools.items():
        for path, prop in properties(tool.input_schema):
            assert prop.get("description"), (name, path)
            assert "type" in prop or "anyOf" in prop, (name, path)
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        hints = tool.annotations
        assert hints.read_only_hint is (name in READS), name
        assert hints.destructive_hint is (name == "remove_document"), name
        assert hints.idempotent_hint is True and hints.open_world_hint is False, name
    filters = tools["search"].input_schema["properties"]["filters"]
    assert set(filters["properties"]) == {"metadata", "source_prefix", "types", "min_quality"}
    assert "prose" in filters["properties"]["types"]["anyOf"][0]["items"]["enum"]
    metadata = tools["upsert_document"].input_schema["properties"]["metadata"]
    assert metadata["type"] == "object" and metadata["maxProperties"] == 64
    assert "cosine" in tools["search"].description and "fused" in tools["search"].description


def properties(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every property of an object schema, nested objects' too, with its path."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        found.append((f"{path}{name}", prop))
        found.extend(properties(prop, f"{path}{name}."))
    return found


def test_bad_arguments_are_tool_errors_in_the_hub_s_words(hub_url) -> None:
    async def main() -> None:
        async with session(hub_url["url"], ADMIN) as mcp:
            for tool, arguments, said in (
                ("search", {}, "INVALID_REQUEST: query: is required"),
                ("search", {"query": "x", "top_k": 0}, "INVALID_REQUEST: top_k: must be ≥ 1"),
                ("search", {"query": "x", "top_k": 10_000}, "INVALID_REQUEST: top_k: must be ≤ 100"),
                ("search", {"query": "x", "top_k": "many"}, "INVALID_REQUEST: top_k: must be an integer"),
                ("search", {"query": "   "}, "INVALID_REQUEST: query: must not be empty"),
                ("search", {"query": "x" * 10_000_000},
                 "INVALID_REQUEST: query: must have at most 8000 characters (it has 10000000)"),
                ("search", {"query": "x", "topk": 3},
                 "INVALID_REQUEST: topk: not an argument of search (it takes query, collection, "
                 "top_k, filters, sources)"),
                ("search", {"query": "x", "filters": {"metadata": {"year": [2020]}}},
                 "INVALID_REQUEST: filters.metadata.year: must be a string, a number or a boolean"),
                ("search", {"query": "x", "filters": {"min_quality": 2}},
                 "INVALID_REQUEST: filters.min_quality: must be ≤ 1.0"),
                ("search", {"query": "x", "filters": {"types": ["poetry"]}},
                 "INVALID_REQUEST: filters.types.0: must be one of 'prose', 'list', 'table', "
                 "'code', 'qa', 'heading' or 'boilerplate'"),
                ("search", {"query": "x", "filters": {"colour": "red"}},
                 "INVALID_REQUEST: filters.colour: is not a field here"),
                ("search", {"query": "x", "collection": "nope"},
                 "COLLECTION_NOT_FOUND: collection 'nope' is not configured in collections.yaml"),
                ("upsert_document", {"collection": "docs", "source": "n.md", "text": "a",
                                     "metadata": {"k": {"n": 1}}},
                 "INVALID_REQUEST: metadata: key 'k': a nested object is not allowed; metadata "
                 "values are strings, numbers, booleans, null or flat lists of those"),
                ("remove_document", {"collection": "docs", "source": "a\nb"},
                 "INVALID_REQUEST: source: must not contain control characters (newlines, tabs, "
                 "NUL, U+0085, U+2028...)"),
                ("summarise", {}, "INVALID_REQUEST: no tool 'summarise' (the tools: search, "
                 "fetch, list_collections, answer, upsert_document, remove_document)"),
            ):  # fmt: skip
                assert error(await mcp.call_tool(tool, arguments)) == said, arguments
            still = data(await mcp.call_tool("search", {"query": "refund", "collection": "docs"}))
            assert still["results"]

    asyncio.run(main())


def test_fetch_says_what_is_missing_and_reads_sources_named_with_colons(hub_url) -> None:
    """Only the first ':' of an id ends the collection: a source may hold ':' and '#'."""
    admin = hub_url["server"].client(headers={"Authorization": f"Bearer {ADMIN}"})
    unnamed = admin.post("/v1/rag/add/document", json={"collection": "docs", "text": "Loose note."})
    assert unnamed.status_code == 200, unnamed.text
    dynamic = unnamed.json()["sources"][0]  # dynamic#<n>: a '#' in the document's name

    async def main() -> None:
        async with session(hub_url["url"], ADMIN) as mcp:
            for id, said in (
                ("docs:nope.md", "DOCUMENT_NOT_FOUND: collection 'docs' has no document 'nope.md'"),
                ("docs:nope.md#0", "DOCUMENT_NOT_FOUND: collection 'docs' has no document "
                 "'nope.md'"),
                ("docs:faq.md#99", "CHUNK_NOT_FOUND: the document 'faq.md' of collection 'docs' "
                 "has no passage 99"),
                ("nope:faq.md", "COLLECTION_NOT_FOUND: collection 'nope' is not configured"),
                ("faq.md", "INVALID_REQUEST: id: 'faq.md' is not an id from search"),
            ):  # fmt: skip
                assert error(await mcp.call_tool("fetch", {"id": id})).startswith(said), id
            wrote = data(await mcp.call_tool("upsert_document", {
                "collection": "docs", "source": "crm:2024/acme.md", "metadata": {"tier": "gold"},
                "text": "Acme renews every March. " * 30}))  # fmt: skip
            assert wrote["added"] == len(wrote["ids"]) > 1
            assert all(id.startswith("docs:crm:2024/acme.md#") for id in wrote["ids"])
            passages = [data(await mcp.call_tool("fetch", {"id": id})) for id in wrote["ids"]]
            assert {p["source"] for p in passages} == {"crm:2024/acme.md"}
            assert passages[0]["metadata"] == {"tier": "gold"}
            document = data(await mcp.call_tool("fetch", {"id": "docs:crm:2024/acme.md"}))
            assert document["chunks"] == len(wrote["ids"]) and "March" in document["text"]
            loose = data(await mcp.call_tool("fetch", {"id": f"docs:{dynamic}"}))
            assert loose["source"] == dynamic and loose["text"] == "Loose note."

    asyncio.run(main())


def test_answer_without_a_collection_names_the_one_that_answered(hub_url) -> None:
    async def main() -> dict[str, Any]:
        async with session(hub_url["url"], READER) as mcp:  # reads both: `auto` routes
            return data(await mcp.call_tool("answer", {"question": "How many days for a refund?"}))

    answer = asyncio.run(main())
    assert answer["collection"] in {"docs", "soporte"}, answer["collection"]
    assert answer["collection"] == answer["sources"][0]["collection"]
    assert answer["collection"] in answer["searched"]


def test_each_result_of_a_wide_auto_search_is_fetched_by_its_id_from_its_own_collection(
    hub_url,
) -> None:
    async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with session(hub_url["url"], READER) as mcp:  # reads both: `auto` routes
            found = data(await mcp.call_tool("search", {"query": "refund 30 days devoluciones"}))
            fetched = [data(await mcp.call_tool("fetch", {"id": r["id"]}))
                       for r in found["results"]]  # fmt: skip
            return found["results"], fetched

    results, fetched = asyncio.run(main())
    assert {r["collection"] for r in results} == {"docs", "soporte"}  # wide: both answered
    for result, got in zip(results, fetched, strict=True):
        assert result["id"] == f"{result['collection']}:{result['source']}#{result['chunk_index']}"
        assert (got["collection"], got["source"]) == (result["collection"], result["source"])
        assert got["text"] == result["text"]


def test_a_passage_of_a_long_document_links_and_fetches_that_passage(hub_url) -> None:
    """A document of several passages: the cited one, not its first or a neighbour, opens."""
    levels = "\n\n".join(
        f"Level {n} of the garage is kept for {who}. Ask the front desk for a pass to it, and "
        f"show that pass to the attendant at the barrier when you drive in."
        for n, who in enumerate(["visitors", "staff", "deliveries", "bicycles"], 1)
    )  # a passage each

    async def main() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        async with session(hub_url["url"], ADMIN) as mcp:
            wrote = data(await mcp.call_tool(
                "upsert_document", {"collection": "docs", "source": "parking.md",
                                    "text": levels}))  # fmt: skip
            assert len(wrote["ids"]) > 2  # several passages
            found = data(await mcp.call_tool(
                "search", {"query": "garage level deliveries", "collection": "docs",
                           "sources": ["parking.md"]}))  # fmt: skip
            first = found["results"][0]
            return wrote["ids"], first, data(await mcp.call_tool("fetch", {"id": first["id"]}))

    ids, first, fetched = asyncio.run(main())
    assert "deliveries" in first["text"] and first["id"] in ids[1:]  # not the document's first
    assert fetched["text"] == first["text"] and fetched["chunk_index"] == first["chunk_index"]
    page = httpx.get(first["url"])  # signed: no key
    assert page.status_code == 200, page.text
    shown = re.search(r'<pre class="text cited" id="passage-text">(.*?)</pre>', page.text, re.S)
    assert shown and html.unescape(shown.group(1)) == first["text"]
    assert f'data-id="{first["id"]}"' in page.text


def test_no_key_is_a_401_with_www_authenticate(hub_url) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    answer = httpx.post(hub_url["url"], json=body, headers=headers, timeout=30)
    assert_error_shape(answer, 401, "UNAUTHORIZED")
    assert answer.headers["www-authenticate"].startswith("Bearer")
