"""The first write after a start reads the collection's largest chunk number (rag_api.points.sequence)
without holding the points lock: a search that arrives during that scan is answered, not held
until the write ends (the scan took 0.3-0.7 s at 10k chunks)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.points.collection import Collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from rag_api.store import Record, Selector, Store
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

SEARCH_WAIT_S = 5.0


class SearchDuringScan:
    """The collection's real store, for its chunk-number allocator: when the allocator scans for
    the largest number, a search runs from another thread first, and whether it was answered
    within SEARCH_WAIT_S is recorded."""

    def __init__(self, store: Store, run_search: Callable[[], Any]) -> None:
        self.store = store
        self.run_search = run_search
        self.answered: list[bool] = []

    def iter_records(self, *args: Any, **kwargs: Any) -> Iterator[Record]:
        searcher = threading.Thread(target=self.run_search)
        searcher.start()
        searcher.join(SEARCH_WAIT_S)
        self.answered.append(not searcher.is_alive())
        return self.store.iter_records(*args, **kwargs)


def open_kb(root: Path) -> tuple[Hub, Collection]:
    config = write_config(root / "collections.yaml", {"kb": hash_collection()})
    settings = Settings(config=config, data_dir=root / "data", qdrant_url=None)
    hub = Hub.open(settings)
    return hub, hub.collection("kb")


@pytest.mark.parametrize("write", ["replace", "delete"])
def test_a_search_is_answered_while_the_first_write_scans_for_chunk_numbers(
    tmp_path: Path, write: str
) -> None:
    hub, kb = open_kb(tmp_path)
    replace_source(kb, "a.md", [Chunk("refund policy", "a.md", 0, {})], {"origin": "api"})
    hub.close()
    hub, kb = open_kb(tmp_path)  # a new process: the allocator has not read the numbers yet
    try:
        probe = SearchDuringScan(kb.sequence.store, lambda: search(kb, SearchRequest("refund")))
        kb.sequence.store = probe
        if write == "replace":
            replace_source(kb, "b.md", [Chunk("yearly plans", "b.md", 0, {})], {"origin": "api"})
        else:
            kb.delete(Selector(sources=("a.md",)), retire=True)
        assert probe.answered == [True]
    finally:
        hub.close()
