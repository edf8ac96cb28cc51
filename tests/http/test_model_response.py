"""The routes send the answer models the domain built, serialised themselves (rag_api.http.model_response):
the bytes must be the ones FastAPI's own response_model path sends for the same answer, key order
included."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from rag_api.answering.models import QueryAnswer
from rag_api.http.model_response import model_response
from rag_api.kbadmin.models import ChunkPage, ContextBlock, SearchResults, SourceList, Status
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import REFUND, start_indexed, write_kb

CALLS = [  # (method, path, body, declared model)
    ("POST", "/query/docs", {"query": REFUND, "generate": False}, QueryAnswer),
    (
        "POST",
        "/query/docs",
        {"query": REFUND, "generate": False, "mode": "dense"},
        QueryAnswer,
    ),
    ("POST", "/query/docs", {"query": REFUND}, QueryAnswer),
    ("POST", "/v1/rag/search", {"query": REFUND, "top_k": 10}, SearchResults),
    ("POST", "/v1/rag/context", {"query": REFUND}, ContextBlock),
    ("POST", "/v1/rag/chunks/list", {"query": REFUND}, ChunkPage),
    ("GET", "/v1/rag/status", None, Status),
    ("GET", "/v1/rag/sources", None, SourceList),
    ("GET", "/v1/rag/chunks?include_text=true", None, ChunkPage),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("declared")
    entry = hash_collection(write_kb(root / "kb"), retrieval={"top_k": 10, "threshold": -1})
    config = write_config(root / "collections.yaml", {"docs": entry})
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, server = start_indexed(settings, "docs")
    yield server
    server.stop()
    hub.close()


def fastapi_bytes(model: type[BaseModel], answer: dict[str, Any]) -> httpx.Response:
    """What a FastAPI route declaring `model` (exclude_unset, as the routes did) sends for `answer`."""
    twin = FastAPI()
    twin.add_api_route("/", lambda: answer, response_model=model, response_model_exclude_unset=True)

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=twin)
        async with httpx.AsyncClient(transport=transport, base_url="http://twin") as client:
            return await client.get("/")

    return asyncio.run(fetch())


@pytest.mark.parametrize(("method", "path", "body", "model"), CALLS)
def test_answers_are_the_bytes_fastapi_would_send(live, method, path, body, model) -> None:
    got = httpx.request(method, live.url + path, json=body, timeout=60)
    assert got.status_code == 200, got.text
    expected = fastapi_bytes(model, json.loads(got.content))
    assert got.content == expected.content
    assert got.headers["content-type"] == expected.headers["content-type"]
    assert got.headers["content-length"] == str(len(got.content))


def test_a_query_answer_keeps_the_model_order_and_adds_no_unset_key(live) -> None:
    body = {"query": REFUND, "generate": False}
    answer = httpx.post(live.url + "/query/docs", json=body).json()
    assert list(answer) == [
        "collection",
        "mode",
        "answer",
        "generator",
        "model",
        "usage",
        "sources",
        "timings_ms",
    ]  # no `warning`, no `routing`: nothing set them
    assert len(answer["sources"]) > 1
    assert all("collection" not in source for source in answer["sources"])
    assert list(answer["sources"][0])[:5] == ["id", "source", "chunk_index", "score", "text"]


def test_an_answer_holds_only_what_it_declares() -> None:
    answer = {"query": "q", "count": 0, "results": [], "collection": "docs", "mode": "dense"}
    assert model_response(SearchResults(**answer)).body.startswith(b'{"query":"q"')
    with pytest.raises(ValidationError, match="surprise"):
        SearchResults(**answer, surprise=1)
    with pytest.raises(ValidationError, match="count"):
        SearchResults(**{**answer, "count": "many"})
