"""The embedded engine's search index built aside (rag_api.store.edge_optimize): the engine holds
the interpreter for a whole call, so an index built in the server's process stopped every request
for its seconds. Built on a copy in a child process, searches go on; writes wait and are kept."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import numpy as np

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.store import PointData, SearchSpec
from rag_api.store.edge import EdgeStore
from rag_api.store.edge_optimize import WORK
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

# past the engine's indexing threshold (10 MB of vectors): a real index build, seconds long
POINTS, DIM = 8000, 384


def bulk(store: EdgeStore, physical: str) -> np.ndarray:
    vectors = np.random.default_rng(7).standard_normal((POINTS, DIM)).astype(np.float32)
    for start in range(0, POINTS, 1000):
        page = range(start, start + 1000)
        payloads = [{"source": f"bulk/{i // 100}", "chunk_index": i % 100} for i in page]
        store.upsert(
            physical,
            [
                PointData(str(uuid.uuid4()), vectors[i].tolist(), p)
                for i, p in zip(page, payloads, strict=True)
            ],
        )
    return vectors


def indexed(store: EdgeStore, physical: str) -> int:
    return store.shards.call(physical, "info").indexed_vectors_count


def test_searches_go_on_while_the_index_is_built_and_find_what_they_found(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "qdrant")
    try:
        store.create_physical("p", DIM)
        vectors = bulk(store, "p")
        info = store.physical_info("p")

        def first(i: int) -> str:
            hits = store.search("p", SearchSpec(limit=3, dense=vectors[i].tolist()), info)
            return hits[0].id

        before = [first(i) for i in range(0, POINTS, 500)]
        finished: list[float] = []
        stop = threading.Event()

        def search_on() -> None:
            while not stop.is_set():
                first(len(finished) % POINTS)
                finished.append(time.monotonic())

        searcher = threading.Thread(target=search_on)
        searcher.start()
        started = time.monotonic()
        store.optimize("p")
        took = time.monotonic() - started
        stop.set()
        searcher.join()
        assert indexed(store, "p") == POINTS  # the built index is the one searched now
        middle = [t for t in finished if started + took / 4 < t < started + 3 * took / 4]
        assert middle, "no search ran while the index was built"
        assert [first(i) for i in range(0, POINTS, 500)] == before
        assert store.count("p") == POINTS
        assert not any((tmp_path / "qdrant" / WORK).iterdir())  # the old shard is gone
    finally:
        store.close()


def test_writes_during_an_index_build_wait_for_it_and_are_kept(tmp_path, make_settings) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(dim=DIM)})
    hub = Hub.open(make_settings(config, "edge"))
    try:
        collection = hub.collection("docs")
        replace_source(collection, "api/first", [Chunk("The first note.", "api/first", 0)], {})
        bulk(hub.store, collection.writable().physical)
        written: list[str] = []
        stop = threading.Event()

        def write_on() -> None:
            while not stop.is_set():
                source = f"api/note-{len(written)}"
                replace_source(collection, source, [Chunk(f"Note {source}.", source, 0)], {})
                written.append(source)

        writer = threading.Thread(target=write_on)
        writer.start()
        collection.optimize()
        stop.set()
        writer.join()
        sources = collection.sources()
        assert [s for s in written if s not in sources] == []  # none lost with the old shard
        assert collection.count() == POINTS + 1 + len(written)
    finally:
        hub.close()


def test_without_room_to_build_aside_the_index_is_built_in_place(tmp_path: Path, caplog) -> None:
    root = tmp_path / "qdrant"
    store = EdgeStore(root)
    try:
        store.create_physical("p", DIM)
        bulk(store, "p")
        (root / WORK).write_text("")  # where the copy would go, a file
        with caplog.at_level("WARNING"):
            store.optimize("p")
        assert "the index is built in place" in caplog.text
        assert indexed(store, "p") == POINTS and store.count("p") == POINTS
    finally:
        store.close()


def test_a_build_a_stop_cut_short_is_cleared_at_open(tmp_path: Path) -> None:
    root = tmp_path / "qdrant"
    EdgeStore(root).close()
    left = root / WORK / "20261206T000000000000" / "p"
    left.mkdir(parents=True)
    (left / "segment").write_bytes(b"half a copy")
    store = EdgeStore(root)
    try:
        assert not (root / WORK).exists() and store.physical_collections() == []
    finally:
        store.close()
