"""The embedded engine's search index built aside (rag_api.store.edge_optimize): the engine holds
the interpreter for a whole call, so an index built in the server's process stopped every request
for its seconds. Built on a copy in a child process, searches and writes go on; the writes are
replayed onto the copy, and a drop cancels the build."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.store import PointData, SearchSpec, edge
from rag_api.store.edge import EdgeStore
from rag_api.store.edge_optimize import WORK
from tests.conftest import LOCAL_ENGINES, hash_collection, write_config
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


@pytest.mark.slow
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


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
@pytest.mark.slow
def test_writes_go_on_during_an_index_build_and_are_in_the_built_index(
    tmp_path, make_settings, engine: str
) -> None:
    """A write waits only while the shard is copied, not for the build: the writes made during
    it land in the live shard and are replayed onto the built copy before it takes its place."""
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(dim=DIM)})
    hub = Hub.open(make_settings(config, engine))
    try:
        collection = hub.collection("docs")
        replace_source(collection, "api/first", [Chunk("The first note.", "api/first", 0)], {})
        bulk(hub.store, collection.writable().physical)
        written: list[tuple[str, float, float]] = []  # source, started, finished
        stop = threading.Event()

        def write_on() -> None:
            while not stop.is_set():
                source, started = f"api/note-{len(written)}", time.monotonic()
                replace_source(collection, source, [Chunk(f"Note {source}.", source, 0)], {})
                written.append((source, started, time.monotonic()))

        writer = threading.Thread(target=write_on)
        writer.start()
        started = time.monotonic()
        collection.optimize()
        took = time.monotonic() - started
        stop.set()
        writer.join()
        sources = collection.sources()
        assert [s for s, _, _ in written if s not in sources] == []  # all in the built index
        assert collection.count() == POINTS + 1 + len(written)
        middle = [w for w in written if started + took / 4 < w[2] < started + 3 * took / 4]
        if engine == "edge":  # the other engine indexes as it goes: optimize has nothing to do
            assert indexed(hub.store, collection.writable().physical) >= POINTS
            assert middle, "no write finished while the index was built"
            longest = max(done - began for _, began, done in written)
            assert longest < took / 2, (longest, took)  # the copy's pause, not the build
    finally:
        hub.close()


@pytest.mark.slow
def test_a_drop_during_an_index_build_cancels_it(tmp_path: Path) -> None:
    """The build's child is stopped, nothing is swapped in, the dropped shard stays dropped."""
    root = tmp_path / "qdrant"
    store = EdgeStore(root)
    try:
        store.create_physical("p", DIM)
        bulk(store, "p")
        dropped = threading.Timer(0.3, store.drop_physical, ("p",))
        dropped.start()
        started = time.monotonic()
        store.optimize("p")
        dropped.join()
        assert "p" not in store.physical_collections()
        assert not _builders() and not any((root / WORK).iterdir())
        assert time.monotonic() - started < 0.3 + _build_seconds(tmp_path) / 2
    finally:
        store.close()


def _build_seconds(tmp_path: Path) -> float:
    """How long this machine takes to build the index of `bulk`'s points aside, now."""
    store = EdgeStore(tmp_path / "timing")
    try:
        store.create_physical("p", DIM)
        bulk(store, "p")
        started = time.monotonic()
        store.optimize("p")
        return time.monotonic() - started
    finally:
        store.close()


@pytest.mark.slow
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


def _builders() -> dict[int, int]:
    """This process's children building an index aside: pid -> their niceness now."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
            ppid = int(stat.rpartition(")")[2].split()[1])
            if ppid == os.getpid() and b"edge_optimize" in cmdline:
                found[int(proc.name)] = os.getpriority(os.PRIO_PROCESS, int(proc.name))
        except (OSError, ValueError):  # gone meanwhile
            continue
    return found


def test_the_index_is_built_aside_at_the_batch_niceness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child that builds the index runs RAG_BATCH_NICE levels below the server, so requests
    come first while it takes its seconds (a small shard here, sent aside all the same)."""
    monkeypatch.setattr(edge, "INDEXED_FROM_BYTES", 0)
    store = EdgeStore(tmp_path / "qdrant", nice=1)
    seen: dict[int, int] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for pid, niceness in _builders().items():
                seen[pid] = max(seen.get(pid, -20), niceness)
            time.sleep(0.002)  # the build's child lives half a second or more

    try:
        store.create_physical("p", DIM)
        store.upsert("p", [PointData(str(uuid.uuid4()), [1.0] * DIM, {"n": n}) for n in range(50)])
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            store.optimize("p")
        finally:
            stop.set()
            watcher.join()
        assert store.count("p") == 50
    finally:
        store.close()
    assert len(seen) == 1, seen  # one build aside, seen while it ran
    assert list(seen.values()) == [min(os.getpriority(os.PRIO_PROCESS, 0) + 1, 19)]
