"""Is one way of ranking better than another on the same questions, or only by chance?

Two retrieval runs scored question by question (nDCG@10 each) are compared as pairs: the mean
difference with a 95% interval from a paired bootstrap (the questions resampled, 10,000 times,
fixed seed: the same inputs give the same interval), and the exact two-sided sign test over the
questions where they differ (ties dropped). An interval that excludes zero and a small p say
the difference is the rankings', not the sample's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairedDifference:
    mean: float
    low: float  # 95% bootstrap interval of the mean
    high: float
    wins: int  # questions where the first run scores higher
    losses: int
    sign_p: float  # exact two-sided sign test over wins + losses

    def summary(self) -> str:
        return (
            f"{self.mean:+.4f} [{self.low:+.4f}, {self.high:+.4f}] "
            f"{self.wins}/{self.losses} p={self.sign_p:.2g}"
        )


def paired_difference(
    first: Sequence[float], second: Sequence[float], resamples: int = 10_000, seed: int = 0
) -> PairedDifference:
    diff = np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64)
    if diff.size == 0:
        raise ValueError("no questions to compare")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    return PairedDifference(
        float(diff.mean()), float(low), float(high), wins, losses, sign_test(wins, losses)
    )


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided p of `wins` against `losses` under a fair coin (1.0 when both are 0)."""
    n, k = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
