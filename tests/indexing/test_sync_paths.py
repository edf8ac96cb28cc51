"""Folder -> collection reconcile: a few paths at a time, renames reuse vectors, odd files skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing import kb
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.sync import stored_files, sync_collection
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

TEXT = "# Orchards\n\nApple trees need pruning in winter.\n\n## Pears\n\nPears ripen off the tree."


@pytest.fixture
def hub(tmp_path: Path, engine: str, make_settings, open_hub) -> Hub:
    (tmp_path / "kb").mkdir()
    config = write_config(
        tmp_path / "collections.yaml", {"notes": hash_collection(tmp_path / "kb")}
    )
    return open_hub(make_settings(config, engine))


def points(hub: Hub) -> dict[tuple[str, int], dict]:
    collection = hub.collection("notes")
    info = collection.info(refresh=True)
    records = hub.store.iter_records(info.physical) if info else []
    return {(r.payload["source"], r.payload["chunk_index"]): r.payload for r in records}


def test_only_the_given_paths_are_synced(hub: Hub) -> None:
    collection = hub.collection("notes")
    root = collection.kb_path
    (root / "a.md").write_text(TEXT)
    (root / "b.md").write_text("Bees pollinate the orchard.")
    sync_collection(collection)
    (root / "a.md").write_text(TEXT + "\n\n## Plums\n\nPlums bruise easily.")
    (root / "b.md").unlink()
    (root / "c.md").write_text("Cherries crack in the rain.")

    report = sync_collection(collection, only=["a.md"])

    assert report.current == {"a.md"} and report.gone == set()
    assert report.stats.embedded == 1  # only the new section; the others keep their vectors
    assert {source for source, _ in points(hub)} == {"a.md", "b.md"}  # b, c not looked at
    report = sync_collection(collection, only=["b.md", "c.md", "missing.md", ".hidden.md"])
    assert report.gone == {"b.md"} and report.current == {"c.md"}
    assert {source for source, _ in points(hub)} == {"a.md", "c.md"}


def test_renamed_file_reuses_its_vectors(hub: Hub) -> None:
    collection = hub.collection("notes")
    root = collection.kb_path
    (root / "a.md").write_text(TEXT)
    first = sync_collection(collection)
    (root / "a.md").rename(root / "b.md")
    with (root / "b.md").open("a") as handle:
        handle.write("\n\n## Plums\n\nPlums bruise easily.")

    report = sync_collection(collection, only=["a.md", "b.md"], renamed={"b.md": "a.md"})

    assert report.stats.embedded == 1 and report.stats.reused == first.stats.embedded
    assert report.gone == {"a.md"}
    assert {source for source, _ in points(hub)} == {"b.md"}


def test_reconcile_finds_files_renamed_while_nobody_watched(hub: Hub) -> None:
    collection = hub.collection("notes")
    root = collection.kb_path
    (root / "sub").mkdir()
    (root / "sub" / "a.md").write_text(TEXT)
    sync_collection(collection)
    (root / "sub").rename(root / "moved")

    report = sync_collection(collection)

    assert report.stats.embedded == 0 and report.stats.reused > 0
    assert {source for source, _ in points(hub)} == {"moved/a.md"}


def test_skipped_files_keep_their_chunks_and_api_chunks_are_never_touched(hub: Hub) -> None:
    collection = hub.collection("notes")
    root = collection.kb_path
    (root / "a.md").write_text(TEXT)
    sync_collection(collection)
    replace_source(
        collection, "api-note", [Chunk("Typed in by hand.", "api-note", 0)], {"origin": "api"}
    )
    (root / "a.md").write_text("Completely different now.")

    report = sync_collection(collection, skip=lambda item: item.rel == "a.md")

    assert report.indexed == 0 and report.gone == set()
    assert "Apple trees" in " ".join(p["text"] for p in points(hub).values())
    (root / "a.md").unlink()
    sync_collection(collection)
    assert set(points(hub)) == {("api-note", 0)}


MANY = 64  # paths asked for at once: one query with all of them


def test_stored_files_answers_for_a_few_paths_or_many(hub: Hub) -> None:
    collection = hub.collection("notes")
    root = collection.kb_path
    for n in range(MANY + 6):
        (root / f"f{n:03}.txt").write_text(f"note number {n}")
    sync_collection(collection)
    everything = stored_files(collection)

    assert len(everything) == MANY + 6
    assert stored_files(collection, ["f001.txt", "nope.txt"]) == {
        "f001.txt": everything["f001.txt"]
    }
    many = [f"f{n:03}.txt" for n in range(MANY + 1)]
    assert stored_files(collection, many) == {rel: everything[rel] for rel in many}


def test_scan_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("hello")
    os.mkfifo(tmp_path / "pipe.md")  # reading it would block the indexer forever
    (tmp_path / "dir.md").mkdir()

    files, skipped = kb.scan(tmp_path)
    assert [f.rel for f in files] == ["good.md"]
    assert skipped == {"pipe.md": "not a regular file"}
    files, skipped = kb.stat_files(tmp_path, ["pipe.md", "dir.md", "good.md", "gone.md"])
    assert [f.rel for f in files] == ["good.md"] and files[0].mtime_ns > 0
    assert skipped == {"pipe.md": "not a regular file", "dir.md": "not a regular file"}


def test_a_file_over_the_size_limit_is_skipped_and_its_chunks_removed(hub: Hub) -> None:
    collection = hub.collection("notes")
    (collection.kb_path / "a.md").write_text(TEXT)
    sync_collection(collection)
    report = sync_collection(collection, max_bytes=10)
    assert report.skipped["a.md"].startswith("larger than the 10 byte limit")
    assert report.gone == {"a.md"} and points(hub) == {}
