"""The HTTP API on a live server: /query end to end with the real model, health, and every error path."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from rag_api.indexing.sync import sync_collection
from tests.conftest import (
    REPO,
    LiveServer,
    assert_error_shape,
    hash_collection,
    minilm_collection,
    repo_yaml,
    write_config,
)
from tests.support.fakes import FakeOllama

QUESTIONS = repo_yaml("tests/data/kb_questions.yaml")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped English kb."""
    root = tmp_path_factory.mktemp("shipped") / "docs"
    shutil.copytree(REPO / "kb" / "docs", root)
    return root


@pytest.mark.slow
def test_query_end_to_end_with_the_bundled_model(
    tmp_path: Path, shipped: Path, make_settings, open_hub, serve
) -> None:
    config = write_config(
        tmp_path / "c.yaml", {"docs": minilm_collection(shipped, retrieval={"threshold": 0.25})}
    )
    settings = make_settings(config)
    hub = open_hub(settings)
    report = sync_collection(hub.collection("docs"))
    assert report.indexed == 5 and not report.errors
    server = serve(settings, hub=hub)
    with server.client() as client:
        body = client.post(
            "/query/docs", json={"query": "How many days do I have to ask for a refund?"}
        ).json()
        assert body["sources"][0]["source"] == "product-faq.md"
        assert "30 days" in body["answer"] and body["generator"] == "extractive"
        assert set(body) >= {
            "answer",
            "sources",
            "collection",
            "generator",
            "model",
            "usage",
            "timings_ms",
            "mode",
        }
        assert set(body["sources"][0]) >= {"source", "chunk_index", "score", "text", "metadata"}
        assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        # the README's `curl -d '{...}'`: curl labels the JSON body a form
        as_curl = client.post(
            "/query/docs",
            content=b'{"query": "How many days do I have to ask for a refund?"}',
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert as_curl.json()["sources"][0]["source"] == "product-faq.md"
        for item in QUESTIONS["docs"]:
            found = client.post(
                "/query/docs", json={"query": item["question"], "generate": False}
            ).json()
            top = [s["source"] for s in found["sources"][:3]]
            assert item["source"] in top, (item["question"], top)
            assert found["answer"] is None and found["generator"] is None
        nothing = client.post(
            "/query/docs", json={"query": "What is the capital of France?"}
        ).json()
        assert nothing["answer"] == "No relevant information was found to answer this question."
        assert nothing["sources"] == [] and nothing["generator"] == "none"


@pytest.fixture
def small(tmp_path: Path, make_settings, open_hub, serve) -> LiveServer:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("## Refunds\n\nRefunds are possible within 30 days of purchase.\n")
    collections = {
        "docs": hash_collection(kb),
        "off": hash_collection(kb, enabled=False),
        "wide": hash_collection(kb, dim=32),
    }
    settings = make_settings(write_config(tmp_path / "c.yaml", collections))
    hub = open_hub(settings)
    sync_collection(hub.collection("docs"))
    sync_collection(hub.collection("wide"))
    hub.close()
    collections["wide"] = hash_collection(kb, dim=48)  # now mismatching what the store holds
    write_config(tmp_path / "c.yaml", collections)
    return serve(settings)


def test_health_ready_and_collections(small: LiveServer) -> None:
    with small.client() as client:
        assert client.get("/health").json() == {"status": "ok"}
        not_ready = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert not_ready["message"].startswith("not ready: wide: collection 'wide' stores 32-dim")
        listed = {c["name"]: c for c in client.get("/collections").json()["collections"]}
        assert listed["docs"]["points"] == 1 and listed["docs"]["physical"] == "docs__v1"
        assert listed["off"]["enabled"] is False


LOOSE = [  # (extra /query fields, the start of the message): JSON's own types (rag_api.schema)
    ({"rerank": 1}, "rerank: must be true or false"),
    ({"generate": "no"}, "generate: must be true or false"),
    ({"stream": 0}, "stream: must be true or false"),
    ({"relative_threshold": True}, "relative_threshold: must be a number, not true"),
    ({"diversity": "0.5"}, 'diversity: must be a number, not "0.5"'),
    ({"top_k": "5"}, 'top_k: must be a number, not "5"'),
    ({"top_k": True}, "top_k: must be a number, not true"),
    ({"filters": {"metadata": {}, "source_prefix": "s"}, "threshold": "0.2"}, "threshold:"),
]


def test_loose_booleans_and_numbers_are_refused_naming_the_field(small: LiveServer) -> None:
    with small.client() as client:
        for extra, message in LOOSE:
            response = client.post("/query/docs", json={"query": "refund", **extra})
            error = assert_error_shape(response, 422, "INVALID_REQUEST")
            assert error["message"].startswith(message), (extra, error)
        body = {"query": "refund", "generate": "false", "rerank": "false", "threshold": 0}
        taken = client.post("/query/docs", json=body | {"relative_threshold": 1})
        assert taken.status_code == 200, taken.text
        assert taken.json()["answer"] is None


def test_every_error_has_the_one_shape(small: LiveServer) -> None:
    with small.client() as client:
        assert_error_shape(
            client.post("/query/nope", json={"query": "x"}), 404, "COLLECTION_NOT_FOUND"
        )
        assert_error_shape(client.post("/query/off", json={"query": "x"}), 503, "RAG_NOT_ENABLED")
        assert_error_shape(
            client.post("/query/docs", json={"query": "   "}), 422, "INVALID_REQUEST"
        )
        missing = assert_error_shape(
            client.post("/query/docs", json={"top_k": 3}), 422, "INVALID_REQUEST"
        )
        assert "query: Field required" in missing["message"]
        empty = assert_error_shape(client.post("/query/docs"), 422, "INVALID_REQUEST")
        assert empty["message"] == "body: a JSON request body is required"
        bad_type = assert_error_shape(
            client.post("/query/docs", json={"query": "x", "top_k": "many"}), 422, "INVALID_REQUEST"
        )
        assert bad_type["message"].startswith("top_k:")
        extra = assert_error_shape(
            client.post("/query/docs", json={"query": "x", "topk": 3}), 422, "INVALID_REQUEST"
        )
        assert "topk" in extra["message"]
        bad_filter = client.post(
            "/query/docs", json={"query": "x", "filters": {"metadata": {"a.b": 1}}}
        )
        assert (
            "metadata key 'a.b'"
            in assert_error_shape(bad_filter, 422, "INVALID_REQUEST")["message"]
        )
        many = {"query": "x", "sources": [f"s{i}" for i in range(1025)]}
        too_many = assert_error_shape(client.post("/query/docs", json=many), 422, "INVALID_REQUEST")
        assert too_many["message"].startswith("sources: List should have at most 1024 items")
        too_big = {"query": "x", "filters": {"metadata": {"k": 2**63}}}
        huge_int = assert_error_shape(
            client.post("/query/docs", json=too_big), 422, "INVALID_REQUEST"
        )
        assert huge_int["message"] == "filters.metadata.k: integer outside the signed 64-bit range"
        broken = client.post(
            "/query/docs", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert "invalid JSON" in assert_error_shape(broken, 422, "INVALID_REQUEST")["message"]
        form = client.post("/query/docs", data={"query": "refund"})  # a real form: not accepted
        assert "invalid JSON" in assert_error_shape(form, 422, "INVALID_REQUEST")["message"]
        huge = b'{"query": "' + b"x" * (1024 * 1024) + b'"}'
        assert_error_shape(client.post("/query/docs", content=huge), 413, "PAYLOAD_TOO_LARGE")
        chunked = client.post("/query/docs", content=iter([huge[:600_000], huge[600_000:]]))
        assert_error_shape(chunked, 413, "PAYLOAD_TOO_LARGE")
        mismatch = assert_error_shape(
            client.post("/query/wide", json={"query": "x"}), 409, "DIMENSION_MISMATCH"
        )
        assert (
            "32-dimensional" in mismatch["message"]
            and "rag-hub migrate wide" in mismatch["message"]
        )
        assert_error_shape(client.get("/no/such/route"), 404, "NOT_FOUND")
        assert_error_shape(client.get("/query/docs"), 405, "METHOD_NOT_ALLOWED")


def test_upstream_outages_are_503_naming_the_upstream(
    tmp_path: Path, make_settings, serve, fake_ollama: FakeOllama
) -> None:
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    config = write_config(
        tmp_path / "c.yaml", {"docs": hash_collection(tmp_path, embedder=embedder)}
    )
    server = serve(make_settings(config, ollama_url=fake_ollama.url))
    fake_ollama.stop()
    with server.client() as client:
        not_ready = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert f"Ollama at {fake_ollama.url}" in not_ready["message"]
        fake_ollama.start()
        assert client.get("/ready").status_code == 200
        server.hub.collection("docs").writable()  # the collection exists: queries must embed
        fake_ollama.stop()
        outage = assert_error_shape(
            client.post("/query/docs", json={"query": "x"}), 503, "EMBEDDER_UNAVAILABLE"
        )
        assert "Ollama at" in outage["message"]

    dead_store = write_config(tmp_path / "d.yaml", {"docs": hash_collection(tmp_path)})
    server = serve(make_settings(dead_store, qdrant_url="http://127.0.0.1:9"))
    with server.client() as client:
        outage = assert_error_shape(
            client.post("/query/docs", json={"query": "x"}), 503, "STORE_UNAVAILABLE"
        )
        assert "Qdrant at http://127.0.0.1:9" in outage["message"]
        assert_error_shape(client.get("/ready"), 503, "NOT_READY")


def test_app_refuses_to_start_on_a_store_another_process_owns(
    tmp_path: Path, make_settings, open_hub
) -> None:
    settings = make_settings(write_config(tmp_path / "c.yaml", {"docs": hash_collection(tmp_path)}))
    open_hub(settings)  # holds the embedded store
    server = LiveServer(settings)
    with pytest.raises(RuntimeError, match="did not start"):
        server.start()
    assert server.exit_code == 3  # uvicorn's start-up failure
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health", timeout=1)
