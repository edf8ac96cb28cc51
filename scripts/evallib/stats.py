"""Latency figures: percentiles of the seconds a benchmark timed, and the machine it timed them on."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from rag_api.evaluation.scoring import latency_summary

__all__ = ["latency_summary", "machine_line", "nearest_p95_ms", "timed"]


def nearest_p95_ms(seconds: Sequence[float]) -> float:
    """The 95th percentile in ms as the nearest rank at or below it (no interpolation between two
    samples, unlike latency_summary); nan when there are none."""
    ordered = sorted(seconds)
    return ordered[int(0.95 * (len(ordered) - 1))] * 1000 if ordered else float("nan")


def timed(call: Callable[[], object]) -> float:
    """Seconds `call()` takes."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def machine_line() -> str:
    """The cores and the load average, to print beside figures that depend on them."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores; load average at the end (1, 5, 15 min): {load}"
