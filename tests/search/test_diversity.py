"""MMR (`diversity`): hand-computed picks, and near-duplicate chunks pushed down on both engines."""

from __future__ import annotations

import pytest

from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.indexing.chunking import Chunk
from rag_api.search.diversity import candidate_pool, diversify
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source


def passage(name: str, score: float, vector: list[float]) -> Passage:
    return Passage(
        id=name, source=name, chunk_index=0, score=score, text=name, metadata={}, vector=vector
    )


# a and b are near-duplicates; c is a little less relevant but says something else
A = passage("a", 0.90, [1.0, 0.0])
B = passage("b", 0.88, [0.99, 0.14])
C = passage("c", 0.80, [0.0, 1.0])
D = passage("d", 0.50, [0.7, 0.7])


def test_zero_diversity_keeps_the_ranking() -> None:
    assert [p.source for p in diversify([A, B, C, D], 0.0, 3)] == ["a", "b", "c"]


def test_mmr_picks_by_hand_computed_marginal_relevance() -> None:
    # relevance min-max scaled: a 1, b 0.95, c 0.75, d 0. With diversity 0.5, after a:
    #   b: 0.5*0.95 - 0.5*cos(a,b)=0.990 -> -0.020;  c: 0.5*0.75 - 0 -> 0.375;  d: 0 - 0.5*0.707
    # after a, c: b's closest is a (0.990) -> -0.020; d's closest is 0.707 -> -0.354
    assert [p.source for p in diversify([A, B, C, D], 0.5, 3)] == ["a", "c", "b"]


def test_full_diversity_picks_by_dissimilarity() -> None:
    # after a: c is orthogonal (0), d at 0.707, b at 0.990
    assert [p.source for p in diversify([A, B, C, D], 1.0, 4)] == ["a", "c", "d", "b"]


def test_a_reranked_list_is_diversified_by_its_rerank_scores() -> None:
    # by rerank score c leads (by retrieval score it would be a); relevance c 1, a 0.9875,
    # b 0.975, d 0; after c: a 0.494 (orthogonal to c), b 0.4875 - 0.5 * 0.14 = 0.418 -> a;
    # then b -0.0075 (a near-duplicate of a) beats d -0.354 (0.707 to both)
    reranked = [
        Passage(**{**vars(p), "rerank_score": s})
        for p, s in ((C, 5.0), (A, 4.9), (B, 4.8), (D, -3.0))
    ]
    assert [p.source for p in diversify(reranked, 0.5, 3)] == ["c", "a", "b"]


def test_candidate_pool() -> None:
    assert candidate_pool(5, 50) == 20
    assert candidate_pool(10, 50) == 40
    assert candidate_pool(5, 8) == 8
    assert candidate_pool(30, 20) == 30


DUPLICATE = "Refunds are granted within 30 days of purchase for monthly plans."
CORPUS = {
    "faq.md": DUPLICATE,
    "faq-copy.md": DUPLICATE.replace("Refunds", "Refunds,"),
    "faq-old.md": DUPLICATE + " (2023)",
    "billing.md": "Annual plans get refunds prorated by the billing team within 30 days.",
    "travel.md": "Hotel nights are reimbursed up to 250 dollars per night.",
}


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_near_duplicates_give_way_to_a_distinct_passage(
    engine, make_settings, open_hub, tmp_path, mode: str
) -> None:
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    hub = open_hub(make_settings(config, engine))
    collection = hub.collection("kb")
    for source, text in CORPUS.items():
        replace_source(collection, source, [Chunk(text, source, 0)], {"origin": "api"})
    query = "refunds within 30 days for monthly plans"
    plain = search(collection, SearchRequest(query, top_k=3, mode=mode, threshold=-1.0))
    assert {p.source for p in plain.passages} == {"faq.md", "faq-copy.md", "faq-old.md"}

    diverse = search(
        collection, SearchRequest(query, top_k=3, mode=mode, threshold=-1.0, diversity=0.7)
    )
    picked = [p.source for p in diverse.passages]
    assert picked[0] == plain.passages[0].source  # the best passage still comes first
    assert "billing.md" in picked and len(picked) == 3

    response = run_query(
        hub, "kb", QueryBody(query=query, top_k=3, mode=mode, diversity=0.7, generate=False)
    )
    assert [s.source for s in response.sources] == picked
