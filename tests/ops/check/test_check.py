"""rag-hub check: each kind of damage is found, --repair fixes the safe ones, exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from rag_api.config import load_config
from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from rag_api.store import PointData, Selector
from tests.conftest import REPO, free_port, hash_collection, run_cli, write_config

TEXT = {
    "guide.md": "# Setup\n\n"
    + " ".join(f"Step {i}: install the agent on host {i} and restart it." for i in range(12))
    + "\n\n# Backups\n\n"
    + " ".join(f"Backup {i} runs nightly to bucket {i} with retention." for i in range(10)),
    "faq.txt": " ".join(
        f"Question {i}: how do I reset password {i}? Use the portal." for i in range(14)
    ),
    "notes.jsonl": '{"text": "The office opens at nine."}\n{"text": "Parking is behind the building."}\n',
}


def make_kb(root: Path) -> Path:
    kb = root / "kb"
    kb.mkdir()
    for name, text in TEXT.items():
        (kb / name).write_text(text, encoding="utf-8")
    return kb


@pytest.fixture
def world(tmp_path, make_settings, open_hub, engine):
    """An indexed hash collection on either engine: (settings, hub, kb folder)."""
    kb = make_kb(tmp_path)
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    settings = make_settings(config, engine)
    hub = open_hub(settings)
    sync_collection(hub.collection("docs"))
    return settings, hub, kb


def findings(hub: Hub, repair: bool = False) -> tuple[dict, list[tuple[str, str, bool]]]:
    document = run_check(hub, repair=repair, sample=50).as_dict()
    return document, [(f["check"], f["subject"], f["repaired"]) for f in document["findings"]]


def physical(hub: Hub) -> str:
    info = hub.collection("docs").info(refresh=True)
    assert info is not None
    return info.physical


def put(hub: Hub, pid: str, dense, payload: dict) -> PointData:
    """Write a point behind the hub's back, with its BM25 vector as the hub would."""
    point = PointData(pid, dense, payload, hub.collection("docs").sparse_of(payload))
    hub.store.upsert(physical(hub), [point])
    return point


def a_point(hub: Hub, selector: Selector):
    records, _ = hub.store.scroll(physical(hub), selector, 1, with_dense=True)
    return records[0]


def test_healthy_collection(world) -> None:
    _, hub, _ = world
    document, found = findings(hub)
    assert found == []
    assert document["status"] == "healthy" and document["exit_code"] == 0
    assert document["collections"][0]["points"] > 10


def test_deleted_changed_and_new_files_are_found_and_repaired(world) -> None:
    _, hub, kb = world
    (kb / "faq.txt").unlink()
    (kb / "guide.md").write_text("# Setup\n\nEverything changed.", encoding="utf-8")
    (kb / "new.md").write_text("A brand new page about invoices.", encoding="utf-8")
    document, found = findings(hub)
    assert document["exit_code"] == 1
    assert sorted(found) == [
        ("files", "guide.md", False),
        ("files", "new.md", False),
        ("orphans", "faq.txt", False),
    ]
    details = {f["subject"]: f["detail"] for f in document["findings"]}
    assert "older version" in details["guide.md"] and "not indexed" in details["new.md"]

    document, found = findings(hub, repair=True)
    assert document["exit_code"] == 0 and all(repaired for *_, repaired in found)
    assert {r["action"] for r in document["repairs"]} == {"deleted orphans", "re-indexed files"}
    assert findings(hub)[1] == []
    assert "faq.txt" not in hub.store.sources(physical(hub))


def test_missing_chunk_is_a_gap(world) -> None:
    _, hub, _ = world
    hub.store.delete(physical(hub), Selector(files=("guide.md",), chunk_index_from=1))
    document, found = findings(hub)
    assert found == [("files", "guide.md", False)]
    assert "missing chunks guide.md#1" in document["findings"][0]["detail"]
    assert findings(hub, repair=True)[0]["exit_code"] == 0
    assert findings(hub)[1] == []


def test_corrupt_payloads(world) -> None:
    _, hub, _ = world
    emptied = a_point(hub, Selector(files=("faq.txt",)))
    put(hub, emptied.id, emptied.dense, {**emptied.payload, "text": ""})
    altered = a_point(hub, Selector(files=("guide.md",)))
    put(hub, altered.id, altered.dense, {**altered.payload, "text": "edited by hand"})
    document, found = findings(hub)
    assert sorted(found) == sorted([("payload", emptied.id, False), ("payload", altered.id, False)])
    assert {f["detail"].split(": ", 1)[1] for f in document["findings"]} == {
        "empty text",
        "text does not match its content_hash",
    }
    assert findings(hub, repair=True)[0]["exit_code"] == 0
    assert findings(hub)[1] == []


def test_duplicate_point(world) -> None:
    _, hub, _ = world
    original = a_point(hub, Selector(files=("guide.md",)))
    copy = put(hub, str(uuid.uuid4()), original.dense, dict(original.payload))
    document, found = findings(hub)
    subject = f"guide.md#{original.payload['chunk_index']}"
    assert found == [("duplicates", subject, False)]
    assert copy.id in document["findings"][0]["detail"]
    assert findings(hub, repair=True)[0]["exit_code"] == 0
    assert hub.store.retrieve(physical(hub), [copy.id, original.id]) != []
    assert [r.id for r in hub.store.retrieve(physical(hub), [copy.id, original.id])] == [
        original.id
    ]


def test_missing_sparse_vectors_are_restored(world) -> None:
    _, hub, _ = world
    point = a_point(hub, Selector(files=("faq.txt",)))
    hub.store.upsert(physical(hub), [PointData(point.id, point.dense, point.payload)])
    assert hub.store.count(physical(hub), Selector(has_sparse=False)) == 1
    assert findings(hub)[1] == [("sparse", "", False)]
    document, found = findings(hub, repair=True)
    assert found == [("sparse", "", True)]
    assert hub.store.count(physical(hub), Selector(has_sparse=False)) == 0


def test_silently_changed_model_is_caught_by_the_sample(world) -> None:
    _, hub, _ = world
    collection = hub.collection("docs")
    other = collection.cfg.embedder.model_copy(update={"model": "another-model"})
    records = list(hub.store.iter_records(physical(hub), with_dense=True))
    vectors = hub.embedders.documents(other, [r.payload["text"] for r in records])
    for record, vector in zip(records, vectors, strict=True):
        put(hub, record.id, vector, record.payload)  # same payload (same embedder id), other vector
    document, found = findings(hub, repair=True)
    assert found == [("vectors", "", False)]
    assert "changed" in document["findings"][0]["detail"] and document["exit_code"] == 1


def test_swapped_embedder_and_wrong_dim_are_never_repaired(world, tmp_path) -> None:
    settings, hub, kb = world
    (kb / "faq.txt").unlink()  # would be repaired on a healthy collection
    before = hub.store.count(physical(hub))
    for change, check in (({"model": "other"}, "embedder"), ({"dim": 96}, "dimension")):
        entry = hash_collection(kb, embedder={**hash_collection()["embedder"], **change})
        write_config(tmp_path / "collections.yaml", {"docs": entry})
        swapped = Hub(settings, load_config(settings.config), hub.store)
        document = run_check(swapped, repair=True).as_dict()
        assert document["exit_code"] == 1
        assert document["repairs"] == []
        assert check in {f["check"] for f in document["findings"]}
        assert "rag-hub migrate docs --provider hash --model" in document["findings"][0]["detail"]
        assert hub.store.count(physical(hub)) == before
    assert [f["check"] for f in document["findings"]] == ["dimension"]


def test_never_indexed_collection_is_created_by_repair(tmp_path, make_settings, open_hub, engine):
    kb = make_kb(tmp_path)
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    hub = open_hub(make_settings(config, engine))
    assert findings(hub)[1] == [("alias", "", False)]
    assert findings(hub, repair=True)[0]["exit_code"] == 0
    assert findings(hub)[1] == []


def test_missing_kb_folder_is_not_read_as_deleted_files(world) -> None:
    _, hub, kb = world
    kb.rename(kb.with_name("kb-unmounted"))
    before = hub.store.count(physical(hub))
    document, found = findings(hub, repair=True)
    assert found == [("files", "", False)] and "does not exist" in document["findings"][0]["detail"]
    assert hub.store.count(physical(hub)) == before


# --- the command: output and exit statuses (embedded engine: a subprocess opens the store) ------


@pytest.fixture
def indexed(tmp_path, make_settings) -> dict[str, str]:
    """An indexed embedded-store collection and the environment that points the CLI at it."""
    kb = make_kb(tmp_path)
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    hub = Hub.open(make_settings(config))
    sync_collection(hub.collection("docs"))
    hub.close()
    return {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_PORT": str(free_port()),  # no server there: the check runs in-process
        "RAG_QDRANT_URL": "",
    }


@pytest.mark.slow
def test_cli_json_human_and_repair(indexed, tmp_path) -> None:
    report = tmp_path / "report.json"
    wrapper = [sys.executable, str(REPO / "scripts" / "check_integrity.py")]
    env = {**os.environ, "PYTHONPATH": str(REPO), **indexed}
    proc = subprocess.run(
        [*wrapper, "--json", "--output", str(report)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1  # one journald line
    assert json.loads(proc.stdout) == json.loads(report.read_text())
    assert json.loads(proc.stdout)["status"] == "healthy"

    (Path(indexed["RAG_CONFIG"]).parent / "kb" / "faq.txt").unlink()
    proc = run_cli("check", "docs", "--repair", "--output", str(report), env=indexed)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # found, and repaired
    assert "orphans: faq.txt: 5 chunks of a file that is gone" in proc.stdout
    assert "[repaired]" in proc.stdout and "repaired docs: deleted orphans" in proc.stdout
    document = json.loads(report.read_text())
    assert document["findings"][0]["repaired"] is True
    assert document["repairs"][0]["action"] == "deleted orphans"


@pytest.mark.parametrize("trouble", ["store down", "config invalid", "store locked", "unknown"])
@pytest.mark.slow
def test_cli_could_not_run(indexed, trouble: str) -> None:
    env = dict(indexed)
    held = None
    if trouble == "store down":
        env["RAG_QDRANT_URL"] = f"http://127.0.0.1:{free_port()}"
    elif trouble == "config invalid":
        Path(env["RAG_CONFIG"]).write_text("collections: {docs: {embedder: {provider: x}}}\n")
    elif trouble == "store locked":
        from rag_api.store.edge import EdgeStore

        held = EdgeStore(Path(env["RAG_DATA_DIR"]) / "qdrant")
    args = ["check", "nope"] if trouble == "unknown" else ["check"]
    try:
        proc = run_cli(*args, "--json", env=env)
    finally:
        if held is not None:
            held.close()
    document = json.loads(proc.stdout)
    assert proc.returncode == document["exit_code"] == 2, proc.stdout + proc.stderr
    assert document["status"] == "error" and document["error"]["message"]
    if trouble == "store locked":
        assert "no rag-hub server answers" in document["error"]["message"]


def test_files_over_the_size_limit_are_skipped_as_the_indexer_skips_them(
    tmp_path, make_settings, open_hub, engine
) -> None:
    """RAG_MAX_FILE_BYTES holds for check and repair too: a file `rag-hub index` skips for its
    size is neither reported as missing nor indexed by --repair (the next index would drop it)."""
    kb = make_kb(tmp_path)
    (kb / "big.txt").write_text("A large manual. " * 400, encoding="utf-8")
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    hub = open_hub(make_settings(config, engine, max_file_bytes=4000))
    sync_collection(hub.collection("docs"), max_bytes=4000)
    document, found = findings(hub, repair=True)
    assert document["exit_code"] == 0, found
    assert "big.txt" not in hub.store.sources(physical(hub))
