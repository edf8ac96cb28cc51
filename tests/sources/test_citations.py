"""A source's passages cite their original everywhere an answer or a search shows them: /query,
/v1/rag/search and /context, /v1/rag/chunks, the OpenAI routes (sources and the footer's links,
through the openai SDK) and MCP results (search and fetch)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import openai
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import hash_collection, write_config
from tests.sources.conftest import finished, web_block

QUESTION = "Which fact about topic 7 is recorded?"


def test_every_surface_links_a_source_passage_to_its_page(
    tmp_path, site, make_settings, serve
) -> None:
    config = write_config(
        tmp_path / "c.yaml", {"docs": hash_collection(None, sources=[web_block(site)])}
    )
    server = serve(make_settings(config))
    page = f"{site.url}/docs/page-07.html"
    http = server.client()
    job = http.post("/v1/collections/docs/sources/help/sync").json()
    assert finished(http, job["id"])["status"] == "done"

    answered = http.post("/query/docs", json={"query": QUESTION}).json()
    assert answered["sources"][0]["url"] == page
    for route in ("/v1/rag/search", "/v1/rag/context"):
        results = http.post(route, json={"query": QUESTION, "collection": "docs"}).json()["results"]
        assert results[0]["url"] == page, route
    chunks = http.get(
        "/v1/rag/chunks", params={"collection": "docs", "source_exact": f"help:{page}"}
    )
    assert {item["url"] for item in chunks.json()["items"]} == {page}

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    chat = client.chat.completions.create(
        model="docs", messages=[{"role": "user", "content": QUESTION}]
    )
    reply = chat.model_dump()
    assert reply["sources"][0]["url"] == page
    assert (
        f"(<{page}>)" in reply["choices"][0]["message"]["content"]
        or f"]({page})" in reply["choices"][0]["message"]["content"]
    )

    async def mcp() -> tuple[dict, dict]:
        async with httpx2.AsyncClient(timeout=60) as raw:
            async with streamable_http_client(server.url + "/mcp", http_client=raw) as (
                read,
                write,
            ):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    found = await session.call_tool(
                        "search", {"query": QUESTION, "collection": "docs"}
                    )
                    first = json.loads(found.content[0].text)["results"][0]
                    fetched = await session.call_tool("fetch", {"id": f"docs:help:{page}"})
                    return first, json.loads(fetched.content[0].text)

    first, document = asyncio.run(mcp())
    assert first["url"] == page and first["source"] == f"help:{page}"
    assert document["url"] == page and "Fact 7-0 is recorded" in document["text"]
