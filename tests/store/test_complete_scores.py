"""DBSF over complete scores (`retrieval.complete_scores`): a candidate only one side listed is
scored on the other side too, by that side's real score scaled by its own list, on hand-computed
scores and through both engines' hybrid search."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import qdrant_edge as qe
from qdrant_client import models as m

from rag_api.hub import Hub
from rag_api.payload import point_id
from rag_api.settings import Settings
from rag_api.store import PointData, SearchSpec, SparseVec
from rag_api.store.fusion import COMPLETE_TOP, Missing, fuse, one_sided, standout_weights
from tests.conftest import hash_collection, write_config

# dense lists a, b, c; BM25 lists c, d, b: a is dense-only, d BM25-only
DENSE = [("a", 0.9), ("b", 0.8), ("c", 0.7)]  # mean 0.8, sd 0.1: 0.5 .. 1.1 -> 0 .. 1
SPARSE = [("c", 6.0), ("d", 3.0), ("b", 0.0)]  # mean 3, sd 3: -6 .. 12 -> 0 .. 1
MISSING = Missing(cosines={"d": 0.75}, bm25={"a": 1.0})


def dbsf(x: float, listed: list[float]) -> float:
    """x scaled by the mean +- 3 sample sd of a side's listed scores."""
    mean = sum(listed) / len(listed)
    sd = math.sqrt(sum((v - mean) ** 2 for v in listed) / (len(listed) - 1))
    return (x - mean + 3 * sd) / (6 * sd)


def test_a_one_sided_candidate_gets_its_real_score_on_the_other_side() -> None:
    fused = dict(fuse(DENSE, SPARSE, "dbsf", 60, "equal", MISSING))
    # dense (x - 0.5) / 0.6 + sparse (x + 6) / 18, both scaled by their own lists
    assert fused == pytest.approx(
        {
            "a": 0.4 / 0.6 + 7 / 18,  # 1.0556: its BM25 1.0, not nothing
            "b": 0.3 / 0.6 + 6 / 18,  # 0.8333
            "c": 0.2 / 0.6 + 12 / 18,  # 1.0
            "d": 0.25 / 0.6 + 9 / 18,  # 0.9167: its cosine 0.75, not nothing
        }
    )
    complete = [pid for pid, _ in fuse(DENSE, SPARSE, "dbsf", 60, "equal", MISSING)]
    assert complete == ["a", "c", "d", "b"]
    # the list-only rule gives a nothing for BM25 and d nothing for dense
    assert [pid for pid, _ in fuse(DENSE, SPARSE, "dbsf", 60, "equal")] == ["c", "b", "a", "d"]


def test_shares_no_term_is_bm25_0_not_scored_is_no_part_and_the_floor_is_0() -> None:
    def a_with(missing: Missing) -> float:
        return dict(fuse(DENSE, SPARSE, "dbsf", 60, "equal", missing))["a"]

    assert a_with(Missing(bm25={"a": 0.0})) == pytest.approx(0.4 / 0.6 + 6 / 18)
    # not asked (below COMPLETE_TOP of its side): no sparse part, as in the list-only rule
    assert a_with(Missing()) == pytest.approx(0.4 / 0.6)
    # a cosine below the dense list's mean - 3 sd counts 0, as an unscored one: never less
    far = dict(fuse(DENSE, SPARSE, "dbsf", 60, "equal", Missing(cosines={"d": 0.2})))
    assert far["d"] == pytest.approx(9 / 18)


def test_one_sided_takes_the_best_candidates_the_other_side_did_not_list() -> None:
    side = [(f"p{n}", 1.0 - n / 100) for n in range(40)]
    other = [("p0", 9.0), ("p3", 8.0)]
    assert one_sided(side, other, top=3) == ["p1", "p2", "p4"]
    assert one_sided(side, other) == [f"p{n}" for n in range(1, 22) if n != 3]  # COMPLETE_TOP 20
    assert COMPLETE_TOP == 20


def test_complete_scores_keep_the_weights_of_the_listed_candidates() -> None:
    sparse = [("c", 9.0), ("d", 5.0), ("b", 4.0)]  # c stands out: BM25 weighs more
    wd, ws = standout_weights(DENSE, sparse, dense_spread=True)
    assert ws > 1.2 > 0.8 > wd
    fused = dict(fuse(DENSE, sparse, "dbsf", 60, "standout_spread", MISSING))
    listed = [score for _, score in sparse]
    assert fused["d"] == pytest.approx(wd * 0.25 / 0.6 + ws * dbsf(5.0, listed))
    assert fused["a"] == pytest.approx(wd * 0.4 / 0.6 + ws * dbsf(1.0, listed))


def test_rrf_fuses_ranks_and_ignores_the_missing_scores() -> None:
    assert fuse(DENSE, SPARSE, "rrf", 60, "equal", MISSING) == fuse(DENSE, SPARSE, "rrf", 60)


TERM, OTHER_TERM = 7, 99


@pytest.fixture
def hub(engine: str, make_settings: Callable[..., Settings], open_hub, tmp_path) -> Hub:
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    return open_hub(make_settings(config, engine))


@pytest.mark.parametrize("complete", [True, False])
def test_both_engines_score_every_candidate_on_both_sides(hub: Hub, complete: bool) -> None:
    # (angle to the query vector, BM25 weight of TERM); F has no TERM at all: BM25 0
    points = {"F": (0.0, None), "A": (0.1, 5.0), "B": (0.2, 6.0), "D": (0.4, 8.0), "E": (0.5, 9.0)}
    store, info = hub.store, hub.store.ensure("complete", dim=2)
    store.upsert(
        info.physical,
        [
            PointData(
                point_id("complete", label, 0),
                [math.cos(angle), math.sin(angle)],
                {"source": label, "chunk_index": 0, "text": label},
                SparseVec([OTHER_TERM], [1.0]) if weight is None else SparseVec([TERM], [weight]),
            )
            for label, (angle, weight) in points.items()
        ],
    )
    info = store.info("complete")
    # 3 candidates a side: dense F, A, B; BM25 E, D, B (F and A dense-only, D and E BM25-only)
    spec = SearchSpec(
        limit=5,
        dense=[1.0, 0.0],
        sparse=SparseVec([TERM], [1.0]),
        candidates=3,
        fusion="dbsf",
        complete=complete,
    )
    hits = {h.payload["source"]: h for h in store.search(info.physical, spec, info)}
    assert set(hits) == set(points)
    idf = hits["E"].sparse_score / 9.0  # one term: BM25 = its IDF x the weight
    cosine = {label: math.cos(angle) for label, (angle, _) in points.items()}
    bm25 = {label: idf * (weight or 0.0) for label, (_, weight) in points.items()}
    listed_dense = [cosine[x] for x in "FAB"]
    listed_sparse = [bm25[x] for x in "EDB"]

    def scaled(score: float, listed: list[float], is_listed: bool) -> float:
        if not complete:  # the list-only rule: a side's part for its own candidates only
            return dbsf(score, listed) if is_listed else 0.0
        return max(dbsf(score, listed), 0.0)  # complete: every candidate, floored at 0

    expected = {
        label: scaled(cosine[label], listed_dense, label in "FAB")
        + scaled(bm25[label], listed_sparse, label in "EDB")
        for label in points
    }
    order = sorted(expected, key=lambda x: -expected[x])
    assert [h.payload["source"] for h in store.search(info.physical, spec, info)] == order
    for label, hit in hits.items():
        assert hit.score == pytest.approx(expected[label], rel=1e-4, abs=1e-4)
        assert hit.dense_score == pytest.approx(cosine[label], abs=1e-5)  # all: the threshold's
    # the two rules rank these points differently (the test tells them apart)
    assert order == (["A", "E", "F", "B", "D"] if complete else ["E", "F", "B", "A", "D"])


def test_integer_ids_are_scored_on_both_sides(
    engine: str, make_settings: Callable[..., Settings], open_hub, tmp_path
) -> None:
    # a collection whose ids are integers (written by another tool, with BM25 vectors): the hub
    # carries them as '1', '2', and asks the engine for its one-sided candidates as 1, 2
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    settings = make_settings(config, engine)
    # (id, angle, BM25 weight): 1 and 2 dense-only at 1 candidate a side, 3 BM25-only
    rows = [(1, 0.0, 1.0), (2, 0.1, 2.0), (3, 0.5, 9.0)]
    if engine == "edge":
        vectors = {"dense": qe.EdgeVectorParams(size=2, distance=qe.Distance.Cosine)}
        bm25 = {"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        shard = qe.EdgeShard.create(
            str(settings.qdrant_path / "ints"), qe.EdgeConfig(vectors, sparse_vectors=bm25)
        )
        points = [
            qe.Point(
                pid,
                {"dense": [math.cos(a), math.sin(a)], "bm25": qe.SparseVector([TERM], [w])},
                {"source": str(pid), "chunk_index": 0, "text": "x"},
            )
            for pid, a, w in rows
        ]
        shard.update(qe.UpdateOperation.upsert_points(points))
        shard.close()
    hub = open_hub(settings)
    if engine == "memory":
        client = hub.store._client
        client.create_collection(
            "ints",
            vectors_config={"dense": m.VectorParams(size=2, distance=m.Distance.COSINE)},
            sparse_vectors_config={"bm25": m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        client.upsert(
            "ints",
            points=[
                m.PointStruct(
                    id=pid,
                    vector={
                        "dense": [math.cos(a), math.sin(a)],
                        "bm25": m.SparseVector(indices=[TERM], values=[w]),
                    },
                    payload={"source": str(pid), "chunk_index": 0, "text": "x"},
                )
                for pid, a, w in rows
            ],
            wait=True,
        )
    info = hub.store.info("ints")
    spec = SearchSpec(
        limit=3,
        dense=[1.0, 0.0],
        sparse=SparseVec([TERM], [1.0]),
        candidates=2,
        fusion="dbsf",
        complete=True,
    )
    hits = {h.id: h for h in hub.store.search(info.physical, spec, info)}
    assert set(hits) == {"1", "2", "3"}
    assert hits["3"].dense_score == pytest.approx(math.cos(0.5), abs=1e-5)
    idf = hits["3"].sparse_score / 9.0
    listed = {"dense": [1.0, math.cos(0.1)], "sparse": [9.0 * idf, 2.0 * idf]}
    # 1 is dense-only: its BM25 (weight 1) was asked for by its integer id
    expected = max(dbsf(1.0, listed["dense"]), 0) + max(dbsf(1.0 * idf, listed["sparse"]), 0)
    assert hits["1"].score == pytest.approx(expected, rel=1e-4, abs=1e-4)
