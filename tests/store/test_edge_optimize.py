"""The parts of an embedded shard's index built aside (rag_api.store.edge_optimize), each alone:
the build (`_build`, what the child runs, here in this process), the child itself (`build_index`),
the journal's replay onto a copy, and the exchange of two folders. tests/store/test_index_aside.py
drives them together through a store and a hub."""

from __future__ import annotations

import ctypes
import errno
import threading
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import qdrant_edge as qe

from rag_api.store import PointData, Selector
from rag_api.store.edge import EdgeStore
from rag_api.store.edge_optimize import _build, build_index, exchange, replay
from rag_api.store.shard_copy import copy_folder
from tests.store.test_index_aside import bulk

DIM = 8


def points(tags: list[str]) -> list[PointData]:
    return [PointData(str(uuid.uuid4()), [1.0] * DIM, {"tag": tag}) for tag in tags]


def tags_in(shard: qe.EdgeShard) -> list[str]:
    records, _ = shard.scroll(qe.ScrollRequest(limit=100, with_payload=True))
    return sorted(r.payload["tag"] for r in records)


def copied(store: EdgeStore, to: Path) -> Path:
    """A copy of shard `p`'s folder, as the store takes one to build aside."""
    store.shards.call("p", "flush")
    copy_folder(store.shards.folder("p"), to)
    return to


@pytest.fixture
def store(tmp_path: Path):
    store = EdgeStore(tmp_path / "qdrant")
    yield store
    store.close()


def test_the_build_optimizes_a_copy_and_leaves_it_flushed(store: EdgeStore, tmp_path: Path) -> None:
    """A small shard (an index past the engine's threshold: tests/store/test_index_aside.py)."""
    store.create_physical("p", DIM)
    store.upsert("p", points(["one", "two"]))
    _build(str(copied(store, tmp_path / "copy")), 0)
    shard = qe.EdgeShard.load(str(tmp_path / "copy"))
    try:
        assert tags_in(shard) == ["one", "two"]
    finally:
        shard.close()


def test_the_child_builds_a_copy_and_ends_well(store: EdgeStore, tmp_path: Path) -> None:
    store.create_physical("p", DIM)
    store.upsert("p", points(["one"]))
    build_index(copied(store, tmp_path / "copy"), 1, threading.Event())
    shard = qe.EdgeShard.load(str(tmp_path / "copy"))
    try:
        assert tags_in(shard) == ["one"]
    finally:
        shard.close()


def test_a_child_that_cannot_build_fails_with_its_reason_and_the_folder(tmp_path: Path) -> None:
    with pytest.raises(OSError) as failed:
        build_index(tmp_path / "no-shard", 0, threading.Event())
    assert failed.value.errno == errno.EIO
    assert failed.value.strerror.startswith("building the index aside: ")
    assert failed.value.filename == str(tmp_path / "no-shard")


def test_a_cancelled_build_stops_its_child(store: EdgeStore, tmp_path: Path) -> None:
    store.create_physical("p", 384)
    bulk(store, "p")
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(OSError) as stopped:
        build_index(copied(store, tmp_path / "copy"), 0, cancelled)
    assert stopped.value.errno == errno.ECANCELED


def test_the_writes_journalled_since_the_copy_are_replayed_onto_it_in_order(
    store: EdgeStore, tmp_path: Path
) -> None:
    store.create_physical("p", DIM)
    first = points(["before"])
    store.upsert("p", first)
    with store.shards.journalled("p") as journal:
        copied(store, tmp_path / "copy")
        store.upsert("p", points(["one", "two"]))
        store.delete("p", Selector(ids=(first[0].id,)))
        store.upsert("p", points(["three"]))
    copy = qe.EdgeShard.load(str(tmp_path / "copy"))
    try:
        assert tags_in(copy) == ["before"]
        assert replay(copy, journal, 0) == 3 == len(journal.writes)
        assert tags_in(copy) == ["one", "three", "two"]
        store.upsert("p", points(["late"]))  # not journalled: the block has ended
        assert replay(copy, journal, 3) == 3
        assert tags_in(copy) == ["one", "three", "two"]
    finally:
        copy.close()


def test_replay_starts_where_it_is_told(store: EdgeStore, tmp_path: Path) -> None:
    store.create_physical("p", DIM)
    with store.shards.journalled("p") as journal:
        copied(store, tmp_path / "copy")
        store.upsert("p", points(["one"]))
        store.upsert("p", points(["two"]))
    copy = qe.EdgeShard.load(str(tmp_path / "copy"))
    try:
        assert replay(copy, journal, 1) == 2
        assert tags_in(copy) == ["two"]
    finally:
        copy.close()


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_two_folders_are_exchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative RAG_DATA_DIR gives relative folders
    first, second = (Path(n) if relative else tmp_path / n for n in ("first", "second"))
    first.mkdir()
    second.mkdir()
    (first / "shard").write_text("old")
    (second / "shard").write_text("built")
    exchange(first, second)
    assert (first / "shard").read_text() == "built"
    assert (second / "shard").read_text() == "old"


def test_a_failed_exchange_says_the_system_s_reason_naming_the_first_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "there").mkdir()
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OSError) as missing:
        exchange(tmp_path / "there", tmp_path / "gone")
    assert (missing.value.errno, missing.value.strerror) == (
        errno.ENOENT,
        "No such file or directory",
    )
    assert missing.value.filename == str(tmp_path / "there")
    with pytest.raises(OSError) as not_a_folder:
        exchange(tmp_path / "there", tmp_path / "a-file" / "inside")
    assert not_a_folder.value.errno == errno.ENOTDIR
    assert (tmp_path / "there").is_dir()


def test_without_renameat2_an_exchange_fails_as_not_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A C library older than glibc 2.28: the caller builds the index in place."""
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: SimpleNamespace())
    with pytest.raises(OSError) as failed:
        exchange(tmp_path / "first", tmp_path / "second")
    assert (failed.value.errno, failed.value.strerror) == (
        errno.ENOSYS,
        "renameat2 is not available",
    )
