"""Document generations: each replacement writes a new one, other writes join the current one, and
a document left holding two (a replacement cut short) is found by check, fixed by --repair, and
completed when the store is opened after a crash."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.kbadmin import writes
from rag_api.kbadmin.models import AddChunks, UpdateChunk, UpsertDocument
from rag_api.ops.check.run import run_check
from rag_api.payload import GEN
from rag_api.points.generations import find_torn
from rag_api.store import PointData, Record, Selector
from rag_api.store.open_marker import FOLDER, OpenMarker
from tests.conftest import hash_collection, write_config


def paragraphs(version: int, count: int) -> str:
    return "\n\n".join(
        f"Paragraph {n} of version {version} about tides and reefs." for n in range(count)
    )


@pytest.fixture
def world(tmp_path: Path, make_settings, engine: str):
    """(settings, kb folder) of a hash collection `docs` with a kb folder, on either engine."""
    kb = tmp_path / "kb"
    kb.mkdir()
    collection = hash_collection(kb, chunking={"size": 64, "overlap": 0})
    config = write_config(tmp_path / "collections.yaml", {"docs": collection})
    return make_settings(config, engine), kb


def records(hub: Hub, selector: Selector = Selector()) -> list[Record]:
    info = hub.collection("docs").info(refresh=True)
    assert info is not None
    return list(hub.store.iter_records(info.physical, selector, with_dense=True))


def generations(hub: Hub, selector: Selector) -> Counter:
    return Counter(r.payload.get(GEN) for r in records(hub, selector))


def upsert(hub: Hub, source: str, version: int, count: int = 4) -> None:
    body = UpsertDocument(source=source, text=paragraphs(version, count), metadata={"v": version})
    writes.upsert_document(hub.collection("docs"), body)


def put_back(hub: Hub, old: list[Record], strip_generation: bool = False) -> None:
    """Write old points back beside the new version: the store a crash between the two
    operations of a replacement leaves (strip_generation: points written before generations)."""
    collection = hub.collection("docs")
    points = []
    for record in old:
        payload = dict(record.payload)
        if strip_generation:
            payload.pop(GEN)
        sparse = collection.sparse.document(payload["text"])
        points.append(PointData(record.id, record.dense, payload, sparse))
    hub.store.upsert(collection.info(refresh=True).physical, points)


API_DOC = Selector(sources=("doc",), origin="api")
KB_FILE = Selector(origin="file", files=("notes.txt",))


def torn_world(hub: Hub, kb: Path, strip_generation: bool = False) -> None:
    """An API document and a kb file each holding their old and their new version."""
    upsert(hub, "doc", 1)
    (kb / "notes.txt").write_text(paragraphs(1, 6))
    sync_collection(hub.collection("docs"))
    old_doc, old_file = records(hub, API_DOC), records(hub, KB_FILE)
    upsert(hub, "doc", 2)
    (kb / "notes.txt").write_text(paragraphs(2, 3))  # shorter: the old tail is deleted after
    sync_collection(hub.collection("docs"))
    overwritten = {r.id for r in records(hub, KB_FILE)}
    put_back(hub, old_doc, strip_generation)
    put_back(hub, [r for r in old_file if r.id not in overwritten], strip_generation)


def versions(hub: Hub) -> tuple[Counter, Counter]:
    """Which versions the API document's and the kb file's chunks hold."""
    doc = Counter(r.payload["metadata"]["v"] for r in records(hub, API_DOC))
    file = Counter(r.payload["text"].split("version ")[-1][0] for r in records(hub, KB_FILE))
    return doc, file


def test_each_replacement_is_a_new_generation_and_other_writes_join_it(world, open_hub) -> None:
    settings, kb = world
    hub = open_hub(settings)
    docs = hub.collection("docs")
    upsert(hub, "doc", 1)
    [first] = generations(hub, API_DOC)
    upsert(hub, "doc", 2)
    [second] = generations(hub, API_DOC)
    assert isinstance(first, int) and second > first

    writes.add_chunks(docs, AddChunks(items=[{"source": "doc", "text": "an added chunk"}]))
    assert generations(hub, API_DOC) == Counter({second: 5})
    upsert(hub, "other", 1)
    [other] = generations(hub, Selector(sources=("other",)))
    listing = {r.payload["text"]: r.payload["seq"] for r in records(hub, API_DOC)}
    moved = UpdateChunk(index=listing["an added chunk"], new_source="other")
    writes.update_chunk(docs, moved)
    edited = UpdateChunk(index=min(listing.values()), new_text="edited in place")
    writes.update_chunk(docs, edited)
    assert generations(hub, API_DOC) == Counter({second: 4})
    assert generations(hub, Selector(sources=("other",))) == Counter({other: 5})
    fresh = UpdateChunk(index=listing["an added chunk"], new_source="fresh")
    writes.update_chunk(docs, fresh)  # a document of its own now, not a replacement: no gen
    assert generations(hub, Selector(sources=("fresh",))) == Counter({None: 1})

    (kb / "notes.txt").write_text(paragraphs(1, 3))
    sync_collection(docs)
    [kb_first] = generations(hub, KB_FILE)
    (kb / "notes.txt").write_text(paragraphs(2, 3))
    sync_collection(docs)
    [kb_second] = generations(hub, KB_FILE)
    assert kb_second > kb_first
    assert find_torn(hub.store, docs.info().physical) == []


@pytest.mark.parametrize("strip_generation", [False, True], ids=["tagged", "pre-generation"])
def test_check_finds_two_versions_and_repair_keeps_the_newest(
    world, open_hub, strip_generation: bool
) -> None:
    settings, kb = world
    hub = open_hub(settings)
    torn_world(hub, kb, strip_generation)
    doc, file = versions(hub)
    assert doc == Counter({1: 4, 2: 4}) and set(file) == {"1", "2"}

    document = run_check(hub, sample=0).as_dict()
    found = {(f["check"], f["subject"]) for f in document["findings"]}
    assert {("versions", "doc"), ("versions", "notes.txt")} <= found
    assert document["exit_code"] == 1
    detail = next(f["detail"] for f in document["findings"] if f["subject"] == "doc")
    assert "source 'doc' holds 2 versions (4 chunks of" in detail

    repaired = run_check(hub, repair=True, sample=0).as_dict()
    assert repaired["exit_code"] == 0, repaired
    assert any(r["action"] == "kept the newest version" for r in repaired["repairs"])
    assert versions(hub) == (Counter({2: 4}), Counter({"2": file["2"]}))
    assert run_check(hub, sample=0).as_dict()["findings"] == []


@pytest.mark.parametrize("engine", ["edge"])
@pytest.mark.parametrize("strip_generation", [False, True], ids=["tagged", "pre-generation"])
def test_a_crash_mid_replacement_is_completed_when_the_store_opens(
    world, strip_generation: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings, kb = world
    hub = Hub.open(settings)
    torn_world(hub, kb, strip_generation)
    upsert(hub, "kept", 1)
    writes.add_chunks(hub.collection("docs"), AddChunks(items=[{"source": "kept", "text": "x y"}]))
    file = versions(hub)[1]
    hub.store.close()  # the process dies: the store is released, the hub's marker stays
    assert len(list((settings.data_dir / FOLDER).iterdir())) == 1

    with caplog.at_level(logging.INFO):
        hub = Hub.open(settings)
    try:
        assert versions(hub) == (Counter({2: 4}), Counter({"2": file["2"]}))
        assert len(records(hub, Selector(sources=("kept",)))) == 5  # one version: untouched
        assert "2 torn replacements completed" in caplog.text
    finally:
        hub.close()
    assert list((settings.data_dir / FOLDER).iterdir()) == []  # closed cleanly
    caplog.clear()
    with caplog.at_level(logging.INFO):
        Hub.open(settings).close()
    assert "not closed cleanly" not in caplog.text


def test_a_server_store_marker_is_stale_only_when_its_process_is_gone(tmp_path: Path) -> None:
    url = "http://qdrant.example:6333"
    mine = OpenMarker.place(tmp_path, url, exclusive=False)
    assert mine.stale == [] and mine.path is not None
    assert OpenMarker.place(tmp_path, url, exclusive=False).stale == []  # mine is alive
    mark = json.loads(mine.path.read_text())
    reused = tmp_path / FOLDER / "reused.json"  # a live pid that started later: not the writer
    reused.write_text(json.dumps({**mark, "started": "0"}))
    gone = tmp_path / FOLDER / "gone.json"
    gone.write_text(json.dumps({**mark, "pid": 2**22 + 1}))  # above any pid_max
    assert sorted(OpenMarker.place(tmp_path, url, exclusive=False).stale) == [gone, reused]
    assert OpenMarker.place(tmp_path, "http://other:6333", exclusive=False).stale == []
    assert len(OpenMarker.place(tmp_path, url, exclusive=True).stale) > 2  # the embedded store
