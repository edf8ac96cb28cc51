"""Batch embedding (indexing, upserts) on threads of lower OS priority than the queries.

On a small machine an indexing batch or an upsert and a query embedding compete for the same
cores; at one priority the batch slows every query it overlaps (scripts/bench_voice.py, 4 callers
with and without a writer). Linux keeps the nice value per thread, and a new thread starts at its
creator's: the threads that embed batches lower their own once, when they start, and the pools
they create (ONNX Runtime's, OpenMP's teams) are born at their priority. The scheduler then gives
a query's thread the cores first and the batch what is left, so writes slow down, never stop.

A lowered nice value is never raised again (that needs privilege): these threads embed batches
only, for the life of the process. Other platforms (no per-thread priority: macOS's
PRIO_PROCESS takes a process id) run the batches at the callers' priority.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("rag_api.embedding.batch_threads")

MAX_NICE = 19  # the lowest priority Linux has


def lower_this_thread(steps: int) -> None:
    """Run the calling thread (and the threads it creates from now on) `steps` nice levels below
    its current priority, at most 19. 0 = leave it; nothing on platforms without thread priorities.
    """
    if steps <= 0 or not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX_NICE, current + steps))
    except OSError as exc:  # a sandbox that forbids it: the batch still runs, at full priority
        log.warning("batch embedding keeps the callers' priority: %s", exc)


def batch_workers(count: int, nice: int, name: str) -> ThreadPoolExecutor:
    """Threads that embed batches only, each `nice` levels below the thread that starts them."""
    return ThreadPoolExecutor(
        count, thread_name_prefix=name, initializer=lower_this_thread, initargs=(nice,)
    )
