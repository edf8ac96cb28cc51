"""Watchers on tmp kb folders over the real embedded store, and ways to see what they indexed."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_api.hub import Hub
from rag_api.search.retrieval import SearchRequest, search
from rag_api.watcher import Watcher
from tests.conftest import hash_collection, write_config

DEBOUNCE_S = 0.2


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    path = tmp_path / "kb"
    path.mkdir()
    return path


@pytest.fixture
def start_watcher(
    tmp_path: Path, make_settings: Callable[..., Any]
) -> Iterator[Callable[..., Watcher]]:
    """start_watcher(kb, **collection_overrides) -> a running Watcher over a fresh hub on the
    embedded store in tmp_path/data (stop() it to reopen that store; stopped at the end).
    run=False: built, not started yet (the test start()s it)."""
    running: list[Watcher] = []

    def start(
        kb: Path,
        *,
        debounce_s: float = DEBOUNCE_S,
        rescan_s: float = 0,
        retry_max_s: float = 0.5,
        run: bool = True,
        clock: Callable[[], float] = time.monotonic,
        **overrides: Any,
    ) -> Watcher:
        collection = hash_collection(kb, **overrides)
        config = write_config(tmp_path / "collections.yaml", {"notes": collection})
        hub = Hub.open(make_settings(config))
        watcher = Watcher(
            hub, debounce_s=debounce_s, rescan_s=rescan_s, retry_max_s=retry_max_s, clock=clock
        )
        running.append(watcher.start() if run else watcher)
        return watcher

    yield start
    for watcher in running:
        stop(watcher)


def stop(watcher: Watcher) -> None:
    """Stop the watcher and close its hub (releasing the embedded store)."""
    watcher.stop()
    watcher.hub.close()


def found(watcher: Watcher, word: str) -> set[str]:
    """Sources whose chunks match `word` (BM25: exact terms, no embedding noise)."""
    collection = watcher.hub.collection("notes")
    outcome = search(collection, SearchRequest(word, top_k=50, mode="sparse"))
    return {passage.source for passage in outcome.passages}


def waiting_in(thread_name: str, function: str) -> bool:
    """The thread's innermost Python frame is `function`: it waits there for a lock the test holds
    (a lock's acquire has no Python frame of its own)."""
    for thread in threading.enumerate():
        if thread.name == thread_name and thread.ident is not None:
            frame = sys._current_frames().get(thread.ident)
            return frame is not None and frame.f_code.co_name == function
    return False


def counters(watcher: Watcher) -> dict[str, int]:
    return watcher.status()["collections"]["notes"]["counters"]


def settled(watcher: Watcher) -> bool:
    """Nothing queued or in progress, and a reconcile done."""
    row = watcher.status()["collections"]["notes"]
    idle = row["queue"] == 0 and not row["reconcile_queued"] and not row["busy"]
    return idle and row["last_reconcile"] is not None
