"""Hybrid fusion of the two sides' candidates, the engine's formulas computed in Python.

The embedded engine runs only the dense and the sparse query and the hub fuses their candidates
here: a fused query beside them would run both sides a second time inside the engine (their
ranks and scores are reported per hit), and fusing the ids before reading any payload reads the
payloads of the returned hits only. Same formulas as Qdrant's (lib/segment/src/common/
score_fusion.rs and rrf): RRF sums 1/(k + rank) with 1-based ranks; DBSF maps each side's scores
to 0..1 between mean -/+ 3 sample standard deviations and sums them.
"""

from __future__ import annotations

import math

Scored = list[tuple[str, float]]


def fuse(dense: Scored, sparse: Scored, method: str, rrf_k: int) -> Scored:
    """(id, fused score) of every candidate, best first; equal scores by dense score, then dense
    candidates before the others (the order the hub gives ties, whatever the engine)."""
    sides = (dense, sparse)
    parts = [_rrf(side, rrf_k) for side in sides] if method == "rrf" else [_dbsf(s) for s in sides]
    fused: dict[str, float] = {}
    for part in parts:
        for pid, score in part:
            fused[pid] = fused.get(pid, 0.0) + score
    cosine = dict(dense)
    return sorted(fused.items(), key=lambda item: (-item[1], -cosine.get(item[0], -2.0)))


def _rrf(side: Scored, k: int) -> Scored:
    return [(pid, 1.0 / (k + rank)) for rank, (pid, _) in enumerate(side, 1)]


def _dbsf(side: Scored) -> Scored:
    if len(side) < 2:
        return [(pid, 0.5) for pid, _ in side]
    scores = [score for _, score in side]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))
    low, high = mean - 3 * sd, mean + 3 * sd
    if high == low:
        return [(pid, 0.5) for pid, _ in side]
    return [(pid, (score - low) / (high - low)) for pid, score in side]


def rank_fusion(lists: list[list[str]], k: int, weights: list[float] | None = None) -> Scored:
    """Weighted RRF of any number of ranked id lists: sum of weight / (k + rank), ranks from 1.
    Ties keep the order of the lists, then of the ranks (the first list wins an equal score)."""
    weights = weights or [1.0] * len(lists)
    fused: dict[str, float] = {}
    for side, weight in zip(lists, weights, strict=True):
        for pid, score in _rrf([(pid, 0.0) for pid in side], k):
            fused[pid] = fused.get(pid, 0.0) + weight * score
    return sorted(fused.items(), key=lambda item: -item[1])  # stable: first seen first
