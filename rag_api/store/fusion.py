"""Hybrid fusion of the two sides' candidates, Qdrant's formulas computed in Python, for both
engines (RRF, DBSF, side weights, complete scores; docs/architecture.md, "store")."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

Scored = list[tuple[Hashable, float]]  # (candidate: its id, or the engine's key for it; score)


@dataclass(frozen=True, slots=True)
class Missing:
    """Each side's real score of some candidates only the other side listed (`one_sided`): the
    cosine of BM25-only ones, the BM25 score of dense-only ones (0 for one that shares no term
    with the query). A candidate absent here has no part on that side, as without them."""

    cosines: dict[Hashable, float] = field(default_factory=dict)
    bm25: dict[Hashable, float] = field(default_factory=dict)


# the one-sided candidates scored on the other side: the best this many of each side's list
# (the lower ones seldom reach the top 10; 75 of SciFact's 100 are one-sided, each costs)
COMPLETE_TOP = 20


def one_sided(side: Scored, other: Scored, top: int | None = None) -> list[Hashable]:
    """The ids of `side`'s best `top` candidates (default COMPLETE_TOP) that `other` did not list."""
    listed = {pid for pid, _ in other}
    return [pid for pid, _ in side if pid not in listed][: COMPLETE_TOP if top is None else top]


def fuse(
    dense: Scored,
    sparse: Scored,
    method: str,
    rrf_k: int,
    weighting: str = "equal",
    missing: Missing | None = None,
) -> Scored:
    """(id, fused score) of every candidate, best first; equal scores by dense score, then dense
    candidates before the others (the order the hub gives ties, whatever the engine). Each side's
    part (its RRF terms, or its DBSF-scaled scores) is multiplied by its weight: 1 and 1 with
    `equal`, `standout_weights` with `standout` and with `standout_spread` (which also scales the
    dense stand-out by `dense_spread_factor`). With DBSF and `missing`, a candidate one side did
    not list is scaled on that side too, by that side's own list (`complete_part`).

    The arithmetic runs on arrays over the candidates (~200 of them; Python loops took about twice
    as long), with the same operations in the same order as the formulas: the same bits."""
    weights = (
        (1.0, 1.0)
        if weighting == "equal"
        else standout_weights(dense, sparse, dense_spread=weighting == "standout_spread")
    )
    dense_ids, dense_scores = _columns(dense)
    sparse_ids, sparse_scores = _columns(sparse)
    ids = list(dict.fromkeys(dense_ids + sparse_ids))  # the dense candidates first
    at = {pid: i for i, pid in enumerate(ids)}
    sparse_at = np.array([at[pid] for pid in sparse_ids], dtype=np.intp)
    dense_at = np.arange(len(dense_ids))
    cosine = np.full(len(ids), -2.0)
    cosine[dense_at] = dense_scores
    if missing is not None:  # a BM25-only candidate's cosine orders its ties too (any method)
        cosine_at, cosines = _positions(missing.cosines, at)
        cosine[cosine_at] = cosines
    fused = np.zeros(len(ids))
    if method == "rrf":
        fused[dense_at] += weights[0] * _rrf(len(dense_ids), rrf_k)
        fused[sparse_at] += weights[1] * _rrf(len(sparse_ids), rrf_k)
    elif missing is None:
        fused[dense_at] += weights[0] * _dbsf(dense_scores, dense_scores)
        fused[sparse_at] += weights[1] * _dbsf(sparse_scores, sparse_scores)
    else:
        complete_part(fused, dense_at, dense_scores, weights[0], cosine_at, cosines)
        complete_part(fused, sparse_at, sparse_scores, weights[1], *_positions(missing.bm25, at))
    order = np.lexsort((-cosine, -fused))  # stable: equal on both keep the candidates' order
    return list(zip([ids[i] for i in order.tolist()], fused[order].tolist(), strict=True))


def standout_weights(
    dense: Scored, sparse: Scored, dense_spread: bool = False
) -> tuple[float, float]:
    """(dense, sparse) weights from how far each side's best candidate stands out of its others.

    A side that knows the answer puts one candidate far above the rest; a side that does not (a
    model that does not know the collection's language, BM25 on a paraphrase) scores its
    candidates alike. Stand-out = (best score - mean of the others) / their sample standard
    deviation, between 0 and STANDOUT_CAP; the weights are 2 * each side's stand-out / their sum
    (1 and 1 when the two stand out alike). With fewer than 3 candidates on a side, or no stand-out
    on either, both weigh 1. With `dense_spread`, the dense stand-out is first multiplied by
    `dense_spread_factor`. Measured in docs/retrieval.md."""
    z_dense, z_sparse = _standout(dense), _standout(sparse)
    if z_dense is None or z_sparse is None:
        return (1.0, 1.0)
    if dense_spread:
        z_dense *= dense_spread_factor(dense)
    total = z_dense + z_sparse
    if total <= 0:
        return (1.0, 1.0)
    return (2 * z_dense / total, 2 * z_sparse / total)


STANDOUT_CAP = 20.0  # a side whose other candidates all score alike stands out "infinitely"
SPREAD_FULL = 0.55  # a dense spread from which the dense stand-out counts fully


def dense_spread_factor(dense: Scored) -> float:
    """min(1, spread / SPREAD_FULL) squared, where spread = (best cosine - the last candidate's)
    / (1 - best cosine): how far the dense side's best candidate is above its last, as a share of
    what the best still lacks to a perfect match (the last candidate is the 100th by default).

    Stand-out alone cannot tell a model that does not know the collection's language: it still
    puts one candidate some sample deviations above the rest (MiniLM on Italian: median 4.2,
    on English SciFact 4.5). What it cannot do is spread its cosines: it scores every passage
    alike and far from 1 (median spread 0.43 with MiniLM on SQuAD-it, 0.62 on XQuAD-es, 0.84 on
    SciFact; 0.98 with e5 on XQuAD-es), so its part shrinks on most questions there and on few
    elsewhere (but on 37 % with e5 on SQuAD-it, median 0.67: hybrid 0.8868 -> 0.8810 there).
    1 for a best cosine of 1 or more (an exact match)."""
    best, last = dense[0][1], dense[-1][1]
    if best >= 1.0:
        return 1.0
    return min(1.0, max(best - last, 0.0) / (1.0 - best) / SPREAD_FULL) ** 2


def _standout(side: Scored) -> float | None:
    if len(side) < 3:
        return None
    mean, sd = _mean_sd(_columns(side[1:])[1])
    gap = side[0][1] - mean
    if sd <= 0:
        return STANDOUT_CAP if gap > 0 else 0.0
    return min(max(gap / sd, 0.0), STANDOUT_CAP)


def complete_part(
    fused: np.ndarray,
    own_at: np.ndarray,
    own: np.ndarray,
    weight: float,
    extra_at: np.ndarray,
    extra_scores: np.ndarray,
) -> None:
    """Add one side's DBSF part over complete scores to `fused`: its own candidates' scores (at
    `own_at`) and those of the other side's candidates a `Missing` map gives (at `extra_at`), all
    scaled by the mean and sd of its own list (Bruch et al., "An Analysis of Fusion Functions for
    Hybrid Retrieval": fuse scores, not lists), floored at 0, times `weight`.

    Without it a candidate that only one side listed gets 0 from the other, as if the other side
    had scored it at its mean - 3 sd; with it, it gets its real score, and the floor keeps a
    candidate scored there never below one left unscored (below COMPLETE_TOP of its list), which
    keeps no part on that side. Measured in docs/retrieval.md."""
    scaled = np.maximum(_dbsf(np.concatenate((own, extra_scores)), own), 0.0)
    fused[own_at] += weight * scaled[: len(own)]
    fused[extra_at] += weight * scaled[len(own) :]


def _columns(side: Scored) -> tuple[list[Hashable], np.ndarray]:
    """A side's ids and its scores as an array."""
    if not side:
        return [], np.zeros(0)
    ids, scores = zip(*side, strict=True)
    return list(ids), np.array(scores, dtype=np.float64)


def _positions(
    scores: dict[Hashable, float], at: dict[Hashable, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Where these candidates are among all (`at`), and their scores, as arrays."""
    return np.array([at[pid] for pid in scores], dtype=np.intp), np.array(
        list(scores.values()), dtype=np.float64
    )


def _rrf(count: int, k: int) -> np.ndarray:
    """1 / (k + rank) for ranks 1..count."""
    return 1.0 / (k + np.arange(1, count + 1, dtype=np.float64))


def _dbsf(scores: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """`scores` scaled by the mean and sd of `listed` (the side's own candidates' scores)."""
    if len(listed) < 2:
        return np.full(len(scores), 0.5)
    mean, sd = _mean_sd(listed)
    low, high = mean - 3 * sd, mean + 3 * sd
    if high == low:
        return np.full(len(scores), 0.5)
    return (scores - low) / (high - low)


def _mean_sd(scores: np.ndarray) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1) of at least two scores, as Qdrant's DBSF."""
    values = scores.tolist()
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum([(x - mean) ** 2 for x in values]) / (len(values) - 1))


def rank_fusion(lists: list[list[str]], k: int, weights: list[float] | None = None) -> Scored:
    """Weighted RRF of any number of ranked id lists: sum of weight / (k + rank), ranks from 1.
    Ties keep the order of the lists, then of the ranks (the first list wins an equal score)."""
    weights = weights or [1.0] * len(lists)
    fused: dict[Hashable, float] = {}
    for side, weight in zip(lists, weights, strict=True):
        for pid, score in zip(side, _rrf(len(side), k).tolist(), strict=True):
            fused[pid] = fused.get(pid, 0.0) + weight * score
    return sorted(fused.items(), key=lambda item: -item[1])  # stable: first seen first
