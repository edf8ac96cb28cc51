"""Reranking through a rerank server (`provider: http`) on loopback: the order is the server's, both
path spellings, the key, and a server that errors, hangs or answers out of range costs one bounded
wait, then searches answer in retrieval order with a warning and the circuit shows it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rag_api.errors import ConfigError, InvalidRequest
from rag_api.evaluation.request import EvalBody, run_eval
from rag_api.indexing.chunking import Chunk
from rag_api.search.retrieval import SearchRequest, search
from tests.conftest import hash_collection, write_config
from tests.search.test_rerank import DOCS
from tests.support.fakes.rerank import FakeReranker, relevance
from tests.support.writes import replace_source

QUERY = "refunds for annual plans"


@pytest.fixture
def reranker():
    with FakeReranker() as fake:
        yield fake


def open_kb(tmp_path: Path, make_settings, open_hub, rerank: dict | None, engine="edge", **env):
    entry = hash_collection(retrieval={"threshold": -1.0, "top_k": 3})
    if rerank is not None:
        entry["rerank"] = rerank
    tmp_path.mkdir(exist_ok=True)
    config = write_config(tmp_path / "collections.yaml", {"kb": entry})
    hub = open_hub(make_settings(config, engine, **env))
    kb = hub.collection("kb")
    for source, text in DOCS.items():
        replace_source(kb, source, [Chunk(text, source, 0)], {"origin": "api"})
    return hub, kb


def server(fake: FakeReranker, base_url: str | None = None, **extra) -> dict:
    block = {"provider": "http", "base_url": base_url or fake.url, "model": fake.model}
    return {**block, "candidates": 5, "timeouts": {"connect": 1, "total": 2}, **extra}


@pytest.mark.parametrize("engine", ["edge", "memory"])
@pytest.mark.parametrize("path", ["", "/v1"])
def test_the_order_is_the_servers(
    engine, path, reranker, make_settings, open_hub, tmp_path
) -> None:
    _, kb = open_kb(
        tmp_path, make_settings, open_hub, server(reranker, reranker.url + path), engine
    )
    retrieved = search(kb, SearchRequest(QUERY, top_k=5, rerank=False)).passages
    expected = sorted(retrieved, key=lambda p: -relevance(QUERY, p.text))[:3]
    assert [p.source for p in expected] != [p.source for p in retrieved[:3]]

    outcome = search(kb, SearchRequest(QUERY))
    assert [p.source for p in outcome.passages] == [p.source for p in expected]
    assert [p.rerank_score for p in outcome.passages] == [
        relevance(QUERY, p.text) for p in expected
    ]
    assert outcome.warning is None and "rerank" in outcome.timings_ms
    [call] = reranker.calls(f"{path}/rerank")
    assert call.body == {
        "model": reranker.model,
        "query": QUERY,
        "documents": [p.text for p in retrieved],
        "top_n": 5,
    }


def test_documents_a_server_leaves_out_follow_in_retrieval_order(
    reranker, make_settings, open_hub, tmp_path
) -> None:
    _, kb = open_kb(tmp_path, make_settings, open_hub, server(reranker))
    retrieved = search(kb, SearchRequest(QUERY, top_k=5, rerank=False)).passages
    reranker.results = [{"index": 3, "relevance_score": 0.9}]  # a server honouring a top_n of 1
    outcome = search(kb, SearchRequest(QUERY))
    assert [p.source for p in outcome.passages] == [
        retrieved[3].source,
        retrieved[0].source,
        retrieved[1].source,
    ]
    assert [p.rerank_score for p in outcome.passages] == [0.9, None, None]


def test_the_key_goes_as_a_bearer_token(make_settings, open_hub, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RERANK_KEY", "s3cret")
    with FakeReranker(api_key="s3cret") as fake:
        _, kb = open_kb(tmp_path, make_settings, open_hub, server(fake, api_key_env="RERANK_KEY"))
        assert search(kb, SearchRequest(QUERY)).warning is None
        assert fake.requests[-1].headers["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    "answer",
    [
        [{"index": 7, "relevance_score": 0.5}],  # out of range
        [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}],  # twice
        [{"index": 1, "relevance_score": "high"}],
        [{"index": True, "relevance_score": 0.5}],
    ],
)
def test_an_answer_that_is_not_one_leaves_the_retrieval_order(
    answer, reranker, make_settings, open_hub, tmp_path
) -> None:
    _, kb = open_kb(tmp_path, make_settings, open_hub, server(reranker))
    retrieved = search(kb, SearchRequest(QUERY, rerank=False)).passages
    reranker.results = answer
    outcome = search(kb, SearchRequest(QUERY))
    assert [p.source for p in outcome.passages] == [p.source for p in retrieved]
    assert all(p.rerank_score is None for p in outcome.passages)
    assert "retrieval order" in outcome.warning and reranker.url in outcome.warning


def test_a_failing_server_opens_its_circuit_and_the_answer_says_so(
    reranker, make_settings, open_hub, tmp_path, serve
) -> None:
    hub, kb = open_kb(tmp_path, make_settings, open_hub, server(reranker), llm_failures=2)
    retrieved = [p.source for p in search(kb, SearchRequest(QUERY, rerank=False)).passages]
    reranker.fail(500, times=2)
    live = serve(hub.settings, hub)
    with live.client() as client:
        for _ in range(2):
            answer = client.post("/query/kb", json={"query": QUERY}).json()
            assert "HTTP 500" in answer["warning"] and "retrieval order" in answer["warning"]
            assert [s["source"] for s in answer["sources"]] == retrieved
        assert len(reranker.calls("/rerank")) == 2
        answer = client.post("/query/kb", json={"query": QUERY}).json()
        assert len(reranker.calls("/rerank")) == 2  # open: not called again in the cool-down
        assert "not called" in answer["warning"]
        assert client.get("/ready").json()["rerank"] == {"kb": "open"}
        status = client.get("/v1/rag/status", params={"collection": "kb"}).json()
        assert status["rerank"]["provider"] == "http"
        assert status["rerank"]["circuit"]["state"] == "open"


def test_a_hanging_server_costs_its_timeout(reranker, make_settings, open_hub, tmp_path) -> None:
    block = server(reranker, timeouts={"connect": 1, "total": 0.5})
    _, kb = open_kb(tmp_path, make_settings, open_hub, block)
    reranker.hang.set()
    started = time.monotonic()
    outcome = search(kb, SearchRequest(QUERY))
    assert time.monotonic() - started < 5  # bounded by the timeout, not by the hang
    assert "timed out" in outcome.warning
    assert len(outcome.passages) == 3 and all(p.rerank_score is None for p in outcome.passages)


def test_a_server_that_is_not_there(make_settings, open_hub, tmp_path) -> None:
    with FakeReranker() as gone:
        block = server(gone)
    _, kb = open_kb(tmp_path, make_settings, open_hub, block)
    outcome = search(kb, SearchRequest(QUERY))
    assert "failed" in outcome.warning and len(outcome.passages) == 3


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"provider": "http", "model": "m"}, "needs a base_url"),
        ({"model": "m", "base_url": "http://x"}, "base_url is for provider 'http'"),
        ({"provider": "cohere", "model": "m"}, "provider"),
    ],
)
def test_a_rerank_block_that_cannot_work_is_refused(
    block, message, make_settings, open_hub, tmp_path
) -> None:
    config = write_config(tmp_path / "c.yaml", {"kb": hash_collection(rerank=block)})
    with pytest.raises(ConfigError, match=message):
        open_hub(make_settings(config))


def test_eval_compares_each_row_with_and_without_the_reranker(
    reranker, make_settings, open_hub, tmp_path
) -> None:
    hub, kb = open_kb(tmp_path, make_settings, open_hub, server(reranker, enabled=False))
    questions = [{"question": QUERY, "sources": ["plans.md"]}]
    body = EvalBody(questions=questions, modes=["hybrid"], compare_rerank=True)
    rows = run_eval(hub, "kb", body)["rows"]
    assert [(r["label"], r["configured"]) for r in rows] == [
        ("hybrid/rrf +rerank", False),
        ("hybrid/rrf -rerank", False),
        ("hybrid/dbsf +rerank", False),
        ("hybrid/dbsf -rerank", True),  # hybrid/dbsf, and the block is there but not enabled
    ]
    assert reranker.calls("/rerank")  # the +rerank row asked the server
    plain = tmp_path / "plain"
    without = open_kb(plain, make_settings, open_hub, None, data_dir=plain / "data")[0]
    with pytest.raises(InvalidRequest, match="no rerank block"):
        run_eval(without, "kb", body)


@pytest.mark.parametrize(
    ("language", "phrase"),
    [("en", "retrieval order"), ("es", "orden de recuperación"), ("it", "ordine di recupero")],
)
def test_the_rerank_failure_warning_is_in_the_collections_language(
    language, phrase, make_settings, open_hub, tmp_path
) -> None:
    entry = hash_collection(retrieval={"threshold": -1.0, "top_k": 3}, language=language)
    entry["rerank"] = {"provider": "http", "base_url": "http://127.0.0.1:9", "model": "m"}
    config = write_config(tmp_path / "collections.yaml", {"kb": entry})
    kb = open_hub(make_settings(config)).collection("kb")
    for source, text in DOCS.items():
        replace_source(kb, source, [Chunk(text, source, 0)], {"origin": "api"})
    outcome = search(kb, SearchRequest(QUERY))
    assert phrase in outcome.warning and "127.0.0.1:9" in outcome.warning, outcome.warning
    assert len(outcome.passages) == 3
