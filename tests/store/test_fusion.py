"""Hybrid fusion inside the store, on both engines: RRF on hand-computed ranks, weights, ties, and
the per-side annotations (score and 1-based rank; exact cosine for hits only BM25 found)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import qdrant_edge as qe

from rag_api.hub import Hub
from rag_api.payload import point_id
from rag_api.settings import Settings
from rag_api.store import CollectionInfo, PointData, SearchSpec, SparseVec, Store
from rag_api.store.fusion import fuse, standout_weights
from tests.conftest import hash_collection, write_config

TERM = 7  # one BM25 term shared by every point: IDF is equal, so the sparse order is by weight
QUERY_DENSE = [1.0, 0.0]
QUERY_SPARSE = SparseVec([TERM], [1.0])


def unit(angle: float) -> list[float]:
    return [math.cos(angle), math.sin(angle)]


def load(
    hub: Hub,
    ranks: dict[str, tuple[int, int]],
    name: str = "fusion",
    angle: Callable[[int], float] = lambda dense_rank: 0.1 * dense_rank,
) -> tuple[Store, CollectionInfo]:
    """Points whose dense rank (by angle to QUERY_DENSE, `angle(rank)`) and sparse rank (by term
    weight) are exactly `ranks[name] = (dense_rank, sparse_rank)`."""
    store = hub.store
    info = store.ensure(name, dim=2)
    points = [
        PointData(
            point_id(name, label, 0),
            unit(angle(dense_rank)),
            {"source": label, "chunk_index": 0, "text": label},
            SparseVec([TERM], [10.0 - sparse_rank]),
        )
        for label, (dense_rank, sparse_rank) in ranks.items()
    ]
    store.upsert(info.physical, points)
    return store, store.info(name)


def rrf(ranks: tuple[int, int], k: int = 60, weights: tuple[float, float] = (1.0, 1.0)) -> float:
    """The RRF paper's score with ranks from 1; a weight divides the rank (Qdrant's form)."""
    return sum(1 / (k + rank / w) for rank, w in zip(ranks, weights, strict=True))


@pytest.fixture
def hub(engine: str, make_settings: Callable[..., Settings], open_hub, tmp_path) -> Hub:
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    return open_hub(make_settings(config, engine))


# (dense rank, sparse rank) per point: the fused order B, A, D, C, E is neither side's order.
RANKS = {"A": (1, 5), "B": (2, 1), "C": (3, 4), "D": (4, 2), "E": (5, 3)}


def test_rrf_order_and_scores_match_the_paper_formula(hub: Hub) -> None:
    store, info = load(hub, RANKS)
    spec = SearchSpec(limit=5, dense=QUERY_DENSE, sparse=QUERY_SPARSE, rrf_k=60)
    hits = store.search(info.physical, spec, info)
    expected = sorted(RANKS, key=lambda label: -rrf(RANKS[label]))
    assert expected == ["B", "A", "D", "C", "E"]
    assert [h.payload["source"] for h in hits] == expected
    for hit in hits:
        dense_rank, sparse_rank = RANKS[hit.payload["source"]]
        assert hit.score == pytest.approx(rrf((dense_rank, sparse_rank)), rel=1e-5)
        assert (hit.dense_rank, hit.sparse_rank) == (dense_rank, sparse_rank)
        assert hit.dense_score == pytest.approx(math.cos(0.1 * dense_rank), abs=1e-5)
        assert hit.sparse_score is not None and hit.sparse_score > 0


def test_rrf_k_changes_the_fusion(hub: Hub) -> None:
    # with a small k the top of each list dominates: A (dense #1) overtakes D and B keeps first
    store, info = load(hub, RANKS)
    spec = SearchSpec(limit=5, dense=QUERY_DENSE, sparse=QUERY_SPARSE, rrf_k=1)
    hits = store.search(info.physical, spec, info)
    expected = sorted(RANKS, key=lambda label: -rrf(RANKS[label], k=1))
    assert [h.payload["source"] for h in hits] == expected
    assert [h.score for h in hits] == pytest.approx([rrf(RANKS[x], k=1) for x in expected])


def dbsf_normalised(scores: list[float]) -> list[float]:
    """Distribution-based score fusion's scaling: mean +- 3 sample standard deviations -> 0..1."""
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))
    return [(x - mean + 3 * sd) / (6 * sd) for x in scores]


def test_dbsf_sums_each_sides_scaled_scores(hub: Hub) -> None:
    store, info = load(hub, RANKS)
    spec = SearchSpec(limit=5, dense=QUERY_DENSE, sparse=QUERY_SPARSE, fusion="dbsf")
    hits = store.search(info.physical, spec, info)
    assert len(hits) == 5
    dense = dict(zip(RANKS, dbsf_normalised([_side(hits, x, "dense") for x in RANKS]), strict=True))
    sparse = dict(
        zip(RANKS, dbsf_normalised([_side(hits, x, "sparse") for x in RANKS]), strict=True)
    )
    expected = {label: dense[label] + sparse[label] for label in RANKS}
    assert [h.payload["source"] for h in hits] == sorted(expected, key=lambda x: -expected[x])
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.payload["source"]], rel=1e-4)


def standout(scores: list[float]) -> float:
    """How far the best stands out of the others: (best - their mean) / their sample sd."""
    best, others = scores[0], scores[1:]
    mean = sum(others) / len(others)
    sd = math.sqrt(sum((x - mean) ** 2 for x in others) / (len(others) - 1))
    return (best - mean) / sd


def test_standout_weights_by_hand() -> None:
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.3)]  # a stands out: z (0.9-0.4)/0.1 = 5
    sparse = [("c", 3.0), ("a", 2.9), ("d", 2.8), ("b", 2.7)]  # c hardly: z (3.0-2.8)/0.1 = 2
    assert fuse(dense, sparse, "dbsf", 60) == fuse(dense, sparse, "dbsf", 60, "equal")
    assert standout_weights(dense, sparse) == pytest.approx((2 * 5 / 7, 2 * 2 / 7))
    fused = dict(fuse(dense, sparse, "rrf", 60, "standout"))
    assert fused["c"] == pytest.approx(10 / 7 / 63 + 4 / 7 / 61)
    assert fused["a"] == pytest.approx(10 / 7 / 61 + 4 / 7 / 62)
    # fewer than 3 candidates on a side, or no stand-out on either: equal weights
    assert standout_weights(dense, sparse[:2]) == (1.0, 1.0)
    flat = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    assert standout_weights(flat, flat) == (1.0, 1.0)
    # a side whose others all score alike stands out at the cap
    assert standout_weights(dense, [("c", 3.0), ("a", 1.0), ("b", 1.0)]) == pytest.approx(
        (2 * 5 / 25, 2 * 20 / 25)
    )


def spread_factor(cosines: list[float]) -> float:
    """The dense side's spread, (best - last) / (1 - best), over 0.55, capped at 1, squared."""
    return min(1.0, (cosines[0] - cosines[-1]) / (1 - cosines[0]) / 0.55) ** 2


def test_standout_spread_shrinks_a_dense_side_that_scores_all_alike() -> None:
    # a stands out of the dense cosines (z 3) but they are bunched far from 1: spread 0.04 / 0.36
    dense = [("a", 0.64), ("b", 0.62), ("c", 0.61), ("d", 0.60)]
    sparse = [("c", 3.0), ("a", 2.9), ("d", 2.8), ("b", 2.7)]  # z 2
    z_dense = 3 * ((0.04 / 0.36) / 0.55) ** 2
    assert standout_weights(dense, sparse, dense_spread=True) == pytest.approx(
        (2 * z_dense / (z_dense + 2), 2 * 2 / (z_dense + 2))
    )
    # stand-out alone leans on dense (6/5 vs 4/5) and ranks a first; the spread hands it to c
    assert [x for x, _ in fuse(dense, sparse, "dbsf", 60, "standout")][:2] == ["a", "c"]
    assert [x for x, _ in fuse(dense, sparse, "dbsf", 60, "standout_spread")][:2] == ["c", "a"]
    # spread from 0.55 up, or a best cosine of 1, leaves the stand-out weights as they are
    spread = [("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.3)]  # (0.9 - 0.3) / 0.1 = 6
    assert standout_weights(spread, sparse, dense_spread=True) == standout_weights(spread, sparse)
    exact = [("a", 1.0), ("b", 0.99), ("c", 0.98), ("d", 0.98)]
    assert standout_weights(exact, sparse, dense_spread=True) == standout_weights(exact, sparse)


@pytest.mark.parametrize("weighting", ["standout", "standout_spread"])
def test_standout_weighting_scales_each_sides_dbsf_part(hub: Hub, weighting: str) -> None:
    # bunched cosines far from 1 (0.34 .. 0.27): the spread factor is about 0.045
    store, info = load(hub, RANKS, angle=lambda dense_rank: 1.2 + 0.02 * dense_rank)
    spec = SearchSpec(
        limit=5, dense=QUERY_DENSE, sparse=QUERY_SPARSE, fusion="dbsf", weighting=weighting
    )
    hits = store.search(info.physical, spec, info)
    by_rank = {side: sorted(RANKS, key=lambda x: RANKS[x][i]) for i, side in enumerate(SIDES)}
    scores = {side: [_side(hits, x, side) for x in by_rank[side]] for side in SIDES}
    z = {side: standout(scores[side]) for side in SIDES}
    if weighting == "standout_spread":
        z["dense"] *= spread_factor(scores["dense"])
        assert z["dense"] < 0.1 * standout(scores["dense"])
    weights = {side: 2 * z[side] / (z["dense"] + z["sparse"]) for side in SIDES}
    scaled = {
        side: dict(zip(by_rank[side], dbsf_normalised(scores[side]), strict=True)) for side in SIDES
    }
    expected = {x: sum(weights[s] * scaled[s][x] for s in SIDES) for x in RANKS}
    assert weights["dense"] != pytest.approx(1.0)  # the test weighs the sides unequally
    assert [h.payload["source"] for h in hits] == sorted(expected, key=lambda x: -expected[x])
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.payload["source"]], rel=1e-4)


SIDES = ("dense", "sparse")


def _side(hits: list, label: str, side: str) -> float:
    return next(getattr(h, f"{side}_score") for h in hits if h.payload["source"] == label)


def test_equal_fused_scores_are_ordered_by_dense_score(hub: Hub) -> None:
    # P and Q tie exactly (1/61 + 1/62 each); P is closer to the query vector, so it comes first
    store, info = load(hub, {"Q": (2, 1), "P": (1, 2), "R": (3, 3)})
    spec = SearchSpec(limit=3, dense=QUERY_DENSE, sparse=QUERY_SPARSE)
    hits = store.search(info.physical, spec, info)
    assert hits[0].score == hits[1].score
    assert [h.payload["source"] for h in hits] == ["P", "Q", "R"]


def test_a_hit_only_bm25_found_gets_its_exact_cosine(hub: Hub) -> None:
    # two candidates per side: E is sparse #1 but dense #5, outside the dense candidates
    ranks = {"A": (1, 5), "B": (2, 4), "C": (3, 3), "D": (4, 2), "E": (5, 1)}
    store, info = load(hub, ranks)
    spec = SearchSpec(limit=5, dense=QUERY_DENSE, sparse=QUERY_SPARSE, candidates=2)
    hits = {h.payload["source"]: h for h in store.search(info.physical, spec, info)}
    assert set(hits) == {"A", "B", "D", "E"}
    assert hits["E"].dense_rank is None and hits["E"].sparse_rank == 1
    assert hits["E"].dense_score == pytest.approx(math.cos(0.5), abs=1e-5)
    assert hits["A"].sparse_rank is None and hits["A"].sparse_score is None
    assert hits["A"].dense_rank == 1


@pytest.mark.parametrize("side", ["dense", "sparse"])
def test_a_one_sided_search_ranks_by_that_side(hub: Hub, side: str) -> None:
    store, info = load(hub, RANKS)
    spec = (
        SearchSpec(limit=5, dense=QUERY_DENSE)
        if side == "dense"
        else SearchSpec(limit=5, sparse=QUERY_SPARSE)
    )
    hits = store.search(info.physical, spec, info)
    position = 0 if side == "dense" else 1
    expected = sorted(RANKS, key=lambda label: RANKS[label][position])
    assert [h.payload["source"] for h in hits] == expected
    assert [getattr(h, f"{side}_rank") for h in hits] == [1, 2, 3, 4, 5]
    assert [getattr(h, f"{side}_score") for h in hits] == [h.score for h in hits]


@pytest.mark.parametrize("method", ["rrf", "dbsf"])
def test_the_hub_fusion_equals_the_engines_own(
    method: str, make_settings: Callable[..., Settings], open_hub, tmp_path
) -> None:
    # the embedded store fuses the two sides' candidates in Python: same ids and scores as the
    # engine's fused query over the same candidates (limit 100 >= both sides: no cut-off ties)
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    hub = open_hub(make_settings(config, "edge"))
    rng = np.random.default_rng(7)
    info = hub.store.ensure("random", dim=8)
    points = [
        PointData(
            point_id("random", f"d{n}", 0),
            rng.normal(size=8).tolist(),
            {"source": f"d{n}", "chunk_index": 0, "text": "x"},
            SparseVec(sorted(rng.choice(40, 4, replace=False).tolist()), rng.random(4).tolist()),
        )
        for n in range(300)
    ]
    hub.store.upsert(info.physical, points)
    info = hub.store.info("random")
    dense, sparse = rng.normal(size=8).tolist(), SparseVec([1, 5, 9, 30], [1.0, 0.5, 0.7, 0.2])
    spec = SearchSpec(limit=100, dense=dense, sparse=sparse, fusion=method, rrf_k=60)
    hits = hub.store.search(info.physical, spec, info)
    fused = qe.QueryRequest(
        limit=100,
        prefetches=[
            qe.Prefetch(limit=50, query=qe.Query.Nearest(dense, using=info.dense_name)),
            qe.Prefetch(
                limit=50,
                query=qe.Query.Nearest(
                    qe.SparseVector(sparse.indices, sparse.values), using=info.sparse_name
                ),
            ),
        ],
        query=qe.Fusion.Dbsf() if method == "dbsf" else qe.Fusion.Rrf(k=61),
    )
    engine = {str(p.id): p.score for p in hub.store.shards.call(info.physical, "query", fused)}
    assert len(hits) == len(engine) > 50
    assert {h.id: h.score for h in hits} == pytest.approx(engine, rel=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
