"""Batch embedding (indexing, upserts) on threads of lower OS priority than the queries: writes
slow down, never stop, and queries get the cores first (docs/architecture.md, "Batch threads")."""

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
