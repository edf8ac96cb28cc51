"""Source evidence through retrieval.search on both engines: the best `evidence_candidates` fused
candidates are ranked by the rule of rag_api.search.evidence (read with their source only), and the
passages returned carry their full payloads, the same on the embedded engine and the server path."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.points.collection import Collection
from rag_api.search.evidence import with_source_evidence
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from tests.conftest import LOCAL_ENGINES, hash_collection, write_config
from tests.support.writes import replace_source

QUERY = "refund policy for yearly plans"
SHARE = 0.5
# one source with a single close match, one with three fair ones, and others around them
DOCS = {
    "single.md": ["Refund policy for yearly plans: prorated refunds."],
    "triple.md": [
        "Yearly plans renew each year.",
        "A refund is possible within 30 days.",
        "The policy covers yearly plans and monthly plans.",
    ],
    "travel.md": ["Hotel refunds need a receipt and a travel policy form."],
    "laptops.md": ["Report a stolen laptop within 2 hours.", "Laptops are replaced yearly."],
}


def open_kb(root: Path, engine: str, share: float, **more: int) -> tuple[Hub, Collection]:
    root.mkdir()
    retrieval = {"source_evidence": share, "candidates": 20, "threshold": -1.0, "top_k": 3, **more}
    config = write_config(root / "collections.yaml", {"kb": hash_collection(retrieval=retrieval)})
    settings = Settings(
        config=config,
        data_dir=root / "data",
        qdrant_url=None if engine == "edge" else ":memory:",
        ollama_url="http://127.0.0.1:9",
    )
    hub = Hub.open(settings)
    kb = hub.collection("kb")
    for source, texts in DOCS.items():
        chunks = [Chunk(text, source, i, {"n": i}) for i, text in enumerate(texts)]
        replace_source(kb, source, chunks, {"origin": "api"})
    return hub, kb


@pytest.fixture
def kbs(tmp_path: Path) -> dict[str, Collection]:
    hubs = {engine: open_kb(tmp_path / engine, engine, SHARE) for engine in LOCAL_ENGINES}
    yield {engine: kb for engine, (_, kb) in hubs.items()}
    for hub, _ in hubs.values():
        hub.close()


def every_candidate(kb: Collection) -> list[Passage]:
    """All fused candidates in fused order, full payloads, no evidence."""
    plain = kb.cfg.retrieval.model_copy(update={"source_evidence": 0.0})
    return search(kb, SearchRequest(QUERY, top_k=20, settings=plain)).passages


def test_passages_rank_by_their_sources_evidence_and_come_back_whole(
    kbs: dict[str, Collection],
) -> None:
    for engine, kb in kbs.items():
        candidates = every_candidate(kb)
        assert len(candidates) == sum(len(texts) for texts in DOCS.values()), engine
        by_evidence = with_source_evidence(candidates, SHARE, lambda p: p.source, lambda p: p.score)
        expected = [(p.id, score) for p, score in by_evidence][:3]
        # the rule changes this query's order, or the test would prove nothing
        assert [pid for pid, _ in expected] != [p.id for p in candidates[:3]], engine

        got = search(kb, SearchRequest(QUERY)).passages
        assert [p.id for p in got] == [pid for pid, _ in expected], engine
        assert [p.score for p in got] == pytest.approx([score for _, score in expected])
        whole = {p.id: p for p in candidates}
        for passage in got:  # read by source only while ranked, then whole
            twin = whole[passage.id]
            assert passage.text and passage.text == twin.text, engine
            assert (passage.source, passage.chunk_index) == (twin.source, twin.chunk_index)
            assert passage.metadata == twin.metadata == {"n": twin.chunk_index}
            assert passage.stored.raw == twin.stored.raw
            assert (passage.dense_score, passage.sparse_rank) == (
                twin.dense_score,
                twin.sparse_rank,
            )


def test_both_engines_rank_by_evidence_alike(kbs: dict[str, Collection]) -> None:
    edge, memory = (search(kbs[e], SearchRequest(QUERY, top_k=6)).passages for e in LOCAL_ENGINES)
    assert [p.id for p in edge] == [p.id for p in memory]
    assert [p.score for p in edge] == pytest.approx([p.score for p in memory], rel=1e-5)
    assert [p.text for p in edge] == [p.text for p in memory]


def test_the_rule_ranks_only_the_best_evidence_candidates(tmp_path: Path) -> None:
    """Fused order: single.md, triple.md 2, triple.md 1, travel.md, triple.md 0, ... Over the best
    4 only, triple.md's first chunk (5th) is not counted: its source's passages gain from each
    other alone, and single.md keeps a place in the top 3 it loses over all seven."""
    for engine in LOCAL_ENGINES:
        hub, kb = open_kb(tmp_path / engine, engine, SHARE, evidence_candidates=4)
        try:
            candidates = every_candidate(kb)
            assert [(p.source, p.chunk_index) for p in candidates[:5]] == [
                ("single.md", 0),
                ("triple.md", 2),
                ("triple.md", 1),
                ("travel.md", 0),
                ("triple.md", 0),
            ], engine
            rule = with_source_evidence(
                candidates[:4], SHARE, lambda p: p.source, lambda p: p.score
            )
            over_all = with_source_evidence(
                candidates, SHARE, lambda p: p.source, lambda p: p.score
            )
            expected = [(p.id, score) for p, score in rule][:3]
            assert [p.source for p, _ in over_all[:3]] == ["triple.md"] * 3, engine

            got = search(kb, SearchRequest(QUERY)).passages
            assert [(p.source, p.chunk_index) for p in got] == [
                ("triple.md", 2),
                ("triple.md", 1),
                ("single.md", 0),
            ], engine
            assert [p.id for p in got] == [pid for pid, _ in expected], engine
            assert [p.score for p in got] == pytest.approx([score for _, score in expected])
            # triple.md 2 gains half of its one sibling among the four (chunk 1), not of two
            first, second = candidates[1].score, candidates[2].score
            assert got[0].score == pytest.approx(first + SHARE * second)
            # a larger top_k takes the others after the four in fused order, with their fused
            # scores: a passage's place does not depend on top_k
            deeper = search(kb, SearchRequest(QUERY, top_k=6)).passages
            assert [p.id for p in deeper] == [p.id for p, _ in rule] + [
                p.id for p in candidates[4:6]
            ], engine
            assert [p.score for p in deeper[4:]] == pytest.approx(
                [p.score for p in candidates[4:6]]
            )
        finally:
            hub.close()
