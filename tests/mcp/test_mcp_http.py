"""/mcp through the MCP SDK's own client (ClientSession over Streamable HTTP) against the real
app under uvicorn on loopback, on both engines."""

from __future__ import annotations

import asyncio
import json
import logging
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


def test_tools_search_fetch_answer_and_list(hub_url) -> None:
    async def main() -> None:
        async with session(hub_url["url"], READER) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            assert names >= {"search", "fetch", "list_collections", "answer",
                             "upsert_document", "remove_document"}  # fmt: skip
            found = data(
                await mcp.call_tool("search", {"query": "refund days", "collection": "docs"})
            )
            first = found["results"][0]
            assert first["source"] == "faq.md" and first["collection"] == "docs"
            fetched = data(await mcp.call_tool("fetch", {"id": first["id"]}))
            assert "30 days" in fetched["text"]
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
            assert refused.is_error and "may not change" in refused.content[0].text
        async with session(hub_url["url"], hub_url["scoped"]) as scoped:
            listed = data(await scoped.call_tool("list_collections", {}))
            assert [c["name"] for c in listed["collections"]] == ["soporte"]
            hidden = await scoped.call_tool("fetch", {"id": docs_id})
            assert hidden.is_error and "COLLECTION_NOT_FOUND" in hidden.content[0].text
            other = await scoped.call_tool("search", {"query": "refund", "collection": "docs"})
            assert other.is_error and "COLLECTION_NOT_FOUND" in other.content[0].text
            wrote = data(await scoped.call_tool(
                "upsert_document", {"collection": "soporte", "source": "notas.md",
                                    "text": "El cliente prefiere el correo."}))  # fmt: skip
            assert wrote["added"] == 1
            found = data(
                await scoped.call_tool("search", {"query": "correo", "collection": "soporte"})
            )
            assert found["results"][0]["source"] == "notas.md"
            removed = data(await scoped.call_tool(
                "remove_document", {"collection": "soporte", "source": "notas.md"}))  # fmt: skip
            assert removed["removed"] == 1

    asyncio.run(main())
    audited = [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"]
    assert any("notes bot" in line and "upsert/document on soporte" in line for line in audited)
    assert any("notes bot" in line and "remove on soporte" in line for line in audited)
    assert not any("upsert/document on docs" in line for line in audited)  # refused: nothing


def test_bad_arguments_are_tool_errors_naming_the_argument(hub_url) -> None:
    async def main() -> None:
        async with session(hub_url["url"], READER) as mcp:
            for arguments, named in (
                ({}, "query"),
                ({"query": "x", "top_k": 0}, "top_k"),
                ({"query": "x", "top_k": 10_000}, "top_k"),
                ({"query": "x", "collection": "nope"}, "nope"),
                ({"query": "x" * 10_000_000}, "query"),
            ):
                result = await mcp.call_tool("search", arguments)
                assert result.is_error and named in result.content[0].text, (arguments, result)
            still = data(await mcp.call_tool("search", {"query": "refund", "collection": "docs"}))
            assert still["results"]

    asyncio.run(main())


def test_no_key_is_a_401_with_www_authenticate(hub_url) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    answer = httpx.post(hub_url["url"], json=body, headers=headers, timeout=30)
    assert_error_shape(answer, 401, "UNAUTHORIZED")
    assert answer.headers["www-authenticate"].startswith("Bearer")
