"""retrieval.search on both engines: allowlists and metadata filters applied inside Qdrant, the
absolute and relative thresholds, the context budget, and payload indexes on filtered fields."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rag_api.answering.answer import select_context
from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.points.collection import Collection
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

DOCS = {
    "faq/refunds.md": ("Refunds are granted within 30 days of purchase.", {"categoria": "ventas"}),
    "faq/plans.md": (
        "Refunds for yearly plans are prorated.",
        {"categoria": "ventas", "year": 2024},
    ),
    "policies/travel.md": ("Hotel refunds need a receipt.", {"categoria": "viajes", "year": 2023}),
    "policies/laptops.md": ("Report a stolen laptop within 2 hours.", {"categoria": "soporte"}),
}


def build(
    tmp_path: Path,
    engine: str,
    make_settings: Callable[..., Settings],
    open_hub: Callable[[Settings], Hub],
    **overrides: Any,
) -> Hub:
    settings = overrides.pop("settings", {})
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection(**overrides)})
    return open_hub(make_settings(config, engine, **settings))


def fill(collection: Collection, docs: dict[str, tuple[str, dict[str, Any]]] = DOCS) -> None:
    for source, (text, metadata) in docs.items():
        replace_source(collection, source, [Chunk(text, source, 0, metadata)], {"origin": "api"})


@pytest.fixture
def kb(engine, make_settings, open_hub, tmp_path) -> Collection:
    collection = build(tmp_path, engine, make_settings, open_hub).collection("kb")
    fill(collection)
    return collection


def sources(collection: Collection, **request: Any) -> list[str]:
    outcome = search(collection, SearchRequest(**{"query": "refunds", "top_k": 10, **request}))
    return [p.source for p in outcome.passages]


def test_omitted_allowlist_restricts_nothing(kb: Collection) -> None:
    assert set(sources(kb, threshold=-1.0)) == set(DOCS)


def test_allowlist_of_one_source(kb: Collection) -> None:
    assert sources(kb, sources=("faq/plans.md",), threshold=-1.0) == ["faq/plans.md"]


def test_empty_allowlist_allows_nothing(kb: Collection) -> None:
    outcome = search(kb, SearchRequest("refunds", sources=(), threshold=-1.0))
    assert outcome.passages == []


def test_source_prefix(kb: Collection) -> None:
    found = sources(kb, source_prefix="policies/", threshold=-1.0)
    assert sorted(found) == ["policies/laptops.md", "policies/travel.md"]


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"categoria": "ventas"}, {"faq/refunds.md", "faq/plans.md"}),
        ({"categoria": "ventas", "year": 2024}, {"faq/plans.md"}),
        ({"year": 2023}, {"policies/travel.md"}),
        ({"categoria": "nada"}, set()),
    ],
)
def test_metadata_equality_filter(
    kb: Collection, metadata: dict[str, Any], expected: set[str]
) -> None:
    for mode in ("dense", "sparse", "hybrid"):
        assert set(sources(kb, metadata=metadata, mode=mode, threshold=-1.0)) == expected


def test_filters_combine_with_the_allowlist(kb: Collection) -> None:
    request = {"sources": ("faq/refunds.md", "policies/travel.md"), "threshold": -1.0}
    assert sources(kb, metadata={"categoria": "ventas"}, **request) == ["faq/refunds.md"]


def test_empty_allowlist_answers_no_evidence_without_calling_the_llm(
    engine, make_settings, open_hub, tmp_path, fake_ollama
) -> None:
    llm = {"provider": "ollama", "model": "llama3.2"}
    hub = build(
        tmp_path, engine, make_settings, open_hub, llm=llm, settings={"ollama_url": fake_ollama.url}
    )
    fill(hub.collection("kb"))
    asked = run_query(hub, "kb", QueryBody(query="refunds", threshold=-1.0))
    assert asked.generator == "ollama" and len(fake_ollama.calls("/api/chat")) == 1

    response = run_query(hub, "kb", QueryBody(query="refunds", sources=[]))
    assert response.sources == []
    assert response.generator == "none"
    assert response.usage is not None
    assert response.usage.model_dump() == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
    }
    assert response.answer
    assert len(fake_ollama.calls("/api/chat")) == 1  # still only the first question's call


def test_absolute_threshold_judges_every_hit_by_its_cosine(kb: Collection) -> None:
    everything = search(kb, SearchRequest("refunds yearly plans", top_k=10, threshold=-1.0))
    cosines = sorted(p.dense_score for p in everything.passages)
    cut = (cosines[0] + cosines[-1]) / 2
    kept = search(kb, SearchRequest("refunds yearly plans", top_k=10, threshold=cut)).passages
    assert 0 < len(kept) < len(everything.passages)
    assert {p.source for p in kept} == {
        p.source for p in everything.passages if p.dense_score >= cut
    }


def test_threshold_does_not_apply_in_sparse_mode(kb: Collection) -> None:
    outcome = search(kb, SearchRequest("refunds", mode="sparse", threshold=0.99))
    assert outcome.mode == "sparse" and outcome.passages
    assert all(p.dense_score is None for p in outcome.passages)


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_relative_threshold_keeps_hits_near_the_best(kb: Collection, mode: str) -> None:
    query = "refunds yearly plans"
    everything = search(kb, SearchRequest(query, top_k=10, threshold=-1.0, mode=mode)).passages
    primary = [p.sparse_score if mode == "sparse" else p.dense_score for p in everything]
    best = max(primary)
    relative = 0.9 if mode != "sparse" else 0.5
    expected = [p.source for p, s in zip(everything, primary, strict=True) if s >= relative * best]
    kept = search(
        kb, SearchRequest(query, top_k=10, threshold=-1.0, mode=mode, relative_threshold=relative)
    ).passages
    assert 0 < len(kept) < len(everything)
    assert [p.source for p in kept] == expected


def passage(text: str) -> Passage:
    return Passage(id=text, source=text, chunk_index=0, score=1.0, text=text, metadata={})


def test_context_budget_keeps_whole_passages_best_first() -> None:
    passages = [passage("a" * 100), passage("b" * 200), passage("c" * 300)]
    assert [len(p.text) for p in select_context(passages, 350)] == [100, 200]
    assert [len(p.text) for p in select_context(passages, 600)] == [100, 200, 300]
    assert [p.text for p in select_context(passages, 40)] == ["a" * 40]  # the first is cut


def test_context_budget_limits_what_reaches_the_generator(
    engine, make_settings, open_hub, tmp_path
) -> None:
    hub = build(tmp_path, engine, make_settings, open_hub, retrieval={"context_chars": 120})
    docs = {f"doc{i}.md": (f"Refunds rule {i}: " + "details " * 8, {}) for i in range(5)}
    fill(hub.collection("kb"), docs)
    body = QueryBody(query="refunds rule", threshold=-1.0, top_k=5)
    retrieved = run_query(hub, "kb", body.model_copy(update={"generate": False})).sources
    answered = run_query(hub, "kb", body).sources
    assert len(retrieved) == 5
    assert sum(len(s.text) for s in answered) <= 120
    assert answered == retrieved[: len(answered)] and 0 < len(answered) < 5


def test_configured_metadata_keys_get_payload_indexes(
    make_settings, open_hub, tmp_path: Path
) -> None:
    retrieval = {"metadata_indexes": {"categoria": "keyword", "year": "integer"}}
    hub = build(tmp_path, "edge", make_settings, open_hub, retrieval=retrieval)
    collection = hub.collection("kb")
    fill(collection)
    indexes = hub.store.payload_indexes(collection.info().physical)
    assert indexes["metadata.categoria"] == "keyword" and indexes["metadata.year"] == "integer"
    assert indexes["source"] == "keyword"  # the hub's own filtered fields


def test_indexes_added_to_the_config_later_are_created_on_first_search(
    make_settings, open_hub, tmp_path: Path
) -> None:
    hub = build(tmp_path, "edge", make_settings, open_hub)
    fill(hub.collection("kb"))
    physical = hub.collection("kb").info().physical
    assert "metadata.categoria" not in hub.store.payload_indexes(physical)
    hub.close()
    retrieval = {"metadata_indexes": {"categoria": "keyword"}}
    hub = build(tmp_path, "edge", make_settings, open_hub, retrieval=retrieval)
    assert sources(hub.collection("kb"), metadata={"categoria": "viajes"}, threshold=-1.0) == [
        "policies/travel.md"
    ]
    assert hub.store.payload_indexes(physical)["metadata.categoria"] == "keyword"
