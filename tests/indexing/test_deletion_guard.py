"""Deletion needs evidence: a missing kb folder deletes nothing, a mass removal waits for --prune."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.errors import KbFolderMissing, MassRemoval
from rag_api.hub import Hub
from rag_api.indexing.sync import (
    mass_removal,
    stored_files,
    sync_collection,
)
from rag_api.ops.check.run import run_check
from tests.conftest import assert_error_shape, hash_collection, run_cli, write_config


def fill(kb: Path, count: int) -> None:
    kb.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (kb / f"note{n}.md").write_text(f"Note {n}: the heron number {n} waits in the shallows.")


@pytest.fixture
def indexed(tmp_path: Path, make_settings) -> dict:
    """A collection with 12 indexed files; its config then points at a mistyped folder."""
    kb = tmp_path / "kb" / "docs"
    fill(kb, 12)
    good = write_config(tmp_path / "good.yaml", {"docs": hash_collection(kb)})
    settings = make_settings(good)
    hub = Hub.open(settings)
    try:
        assert sync_collection(hub.collection("docs")).indexed == 12
    finally:
        hub.close()
    typo = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection(kb.parent / "dosc")}
    )
    return {"kb": kb, "good": good, "typo": typo, "settings": settings}


def chunk_files(hub: Hub) -> set[str]:
    return set(stored_files(hub.collection("docs")))


def test_a_mistyped_folder_deletes_nothing(indexed: dict, make_settings, open_hub) -> None:
    hub = open_hub(make_settings(indexed["typo"]))
    docs = hub.collection("docs")
    with pytest.raises(KbFolderMissing, match=r"kb folder .*dosc does not exist"):
        sync_collection(docs)
    with pytest.raises(KbFolderMissing):
        sync_collection(docs, only=["note1.md"])  # what the watcher's event path runs
    assert len(chunk_files(hub)) == 12


def test_a_kb_path_that_is_a_file_deletes_nothing(
    indexed: dict, tmp_path: Path, make_settings, open_hub
) -> None:
    not_a_folder = tmp_path / "plain.txt"
    not_a_folder.write_text("a file where a folder should be")
    config = write_config(tmp_path / "file.yaml", {"docs": hash_collection(not_a_folder)})
    hub = open_hub(make_settings(config))
    with pytest.raises(KbFolderMissing, match="is not a directory"):
        sync_collection(hub.collection("docs"))
    assert len(chunk_files(hub)) == 12


def test_a_mass_removal_waits_for_prune(indexed: dict, make_settings, open_hub) -> None:
    hub = open_hub(make_settings(indexed["good"]))
    docs = hub.collection("docs")
    for n in range(7):  # 7 of 12: more than half
        (indexed["kb"] / f"note{n}.md").unlink()
    with pytest.raises(MassRemoval, match=r"7 of 12 files .*--prune"):
        sync_collection(docs)
    assert len(chunk_files(hub)) == 12
    report = sync_collection(docs, prune=True)
    assert report.removed == 7 and len(chunk_files(hub)) == 5


def test_removing_a_few_files_needs_no_prune(indexed: dict, make_settings, open_hub) -> None:
    hub = open_hub(make_settings(indexed["good"]))
    for n in range(6):  # 6 of 12: half, not more
        (indexed["kb"] / f"note{n}.md").unlink()
    assert sync_collection(hub.collection("docs")).removed == 6


def test_a_small_collection_may_lose_most_files(tmp_path: Path, make_settings, open_hub) -> None:
    kb = tmp_path / "kb"
    fill(kb, 9)
    hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})))
    sync_collection(hub.collection("docs"))
    for n in range(8):
        (kb / f"note{n}.md").unlink()
    assert sync_collection(hub.collection("docs")).removed == 8


@pytest.mark.parametrize(
    ("stored", "gone", "held"),
    [
        (10, 6, True),  # the smallest guarded collection: more than half is held
        (10, 5, False),  # exactly half is not more than half
        (9, 9, False),  # one file under the guard's size
        (12, 6, False),
        (12, 7, True),
    ],
)
def test_the_guards_boundaries(stored: int, gone: int, held: bool) -> None:
    assert mass_removal(stored, gone) is held


@pytest.mark.parametrize(("gone", "held"), [(6, True), (5, False)])
def test_a_ten_file_collection_at_the_boundary(
    gone: int, held: bool, tmp_path: Path, make_settings, open_hub
) -> None:
    kb = tmp_path / "kb"
    fill(kb, 10)
    hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})))
    assert sync_collection(hub.collection("docs")).indexed == 10
    for n in range(gone):
        (kb / f"note{n}.md").unlink()
    if held:
        with pytest.raises(MassRemoval, match=rf"{gone} of 10 files"):
            sync_collection(hub.collection("docs"))
        assert len(chunk_files(hub)) == 10
    else:
        assert sync_collection(hub.collection("docs")).removed == gone
        assert len(chunk_files(hub)) == 10 - gone


@pytest.mark.slow
def test_index_refuses_a_missing_folder_and_goes_on_with_the_others(
    indexed: dict, tmp_path: Path
) -> None:
    other = tmp_path / "kb" / "other"
    fill(other, 1)
    config = write_config(
        tmp_path / "two.yaml",
        {"docs": hash_collection(indexed["kb"].parent / "dosc"), "other": hash_collection(other)},
    )
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(indexed["settings"].data_dir)}
    result = run_cli("index", env=env)
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "docs" in errors[0] and "dosc does not exist" in errors[0]
    assert "other: 1 files (1 indexed" in result.stdout
    rows = json.loads(run_cli("collections", "--json", env=env).stdout)
    assert {r["name"]: r["points"] for r in rows}["docs"] == 12


@pytest.mark.slow
def test_index_asks_before_a_mass_removal(indexed: dict) -> None:
    env = {"RAG_CONFIG": str(indexed["good"]), "RAG_DATA_DIR": str(indexed["settings"].data_dir)}
    for n in range(10):
        (indexed["kb"] / f"note{n}.md").unlink()
    refused = run_cli("index", env=env)  # stdin is not a terminal: no one to ask
    assert refused.returncode == 1
    assert "10 of 12 files" in refused.stderr and "--prune" in refused.stderr
    pruned = run_cli("index", "--prune", env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert "10 removed" in pruned.stdout


def test_check_repair_deletes_nothing_for_a_missing_folder(
    indexed: dict, make_settings, open_hub
) -> None:
    hub = open_hub(make_settings(indexed["typo"]))
    report = run_check(hub, repair=True).as_dict()
    assert report["exit_code"] == 1 and report["repairs"] == []
    (finding,) = [f for f in report["findings"] if f["check"] == "files"]
    assert finding["detail"].startswith("kb folder missing") and "dosc" in finding["detail"]
    assert len(chunk_files(hub)) == 12


def test_check_repair_holds_a_mass_removal(indexed: dict, make_settings, open_hub) -> None:
    for n in range(8):
        (indexed["kb"] / f"note{n}.md").unlink()
    hub = open_hub(make_settings(indexed["good"]))
    report = run_check(hub, repair=True).as_dict()
    assert report["exit_code"] == 1 and report["repairs"] == []
    assert any("--prune" in f["detail"] for f in report["findings"])
    assert len(chunk_files(hub)) == 12


def test_reload_refuses_and_status_says_kb_folder_missing(
    indexed: dict, make_settings, serve
) -> None:
    server = serve(make_settings(indexed["typo"]))
    client = server.client()
    added = client.post(
        "/v1/rag/add/chunks",
        json={"items": [{"text": "A temporary note.", "source": "tmp"}], "persist": False},
    )
    assert added.status_code == 200, added.text
    error = assert_error_shape(client.post("/v1/rag/reload"), 409, "KB_FOLDER_MISSING")
    assert "dosc" in error["message"]
    status = client.get("/v1/rag/status").json()
    assert status["chunks"] == 13 and status["temporary_chunks"] == 1  # nothing half-done
    assert status["kb_folder"].startswith("kb folder missing")
    ready = client.get("/ready")
    assert ready.status_code == 200  # it keeps serving what it has
    assert ready.json()["kb_folders"]["docs"].startswith("kb folder missing")


def test_reload_with_prune_applies_a_mass_removal(indexed: dict, make_settings, serve) -> None:
    for n in range(8):
        (indexed["kb"] / f"note{n}.md").unlink()
    client = serve(make_settings(indexed["good"])).client()
    assert_error_shape(client.post("/v1/rag/reload"), 409, "MASS_REMOVAL_HELD")
    pruned = client.post("/v1/rag/reload", json={"prune": True})
    assert pruned.status_code == 200 and pruned.json()["removed_files"] == 8


def test_an_api_fed_collection_is_never_synced(tmp_path: Path, make_settings, open_hub) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": {**hash_collection(), "kb": None}})
    hub = open_hub(make_settings(config))
    assert hub.collection("docs").kb_path is None
    assert sync_collection(hub.collection("docs")).files == 0
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "other-data")}
    result = run_cli("index", env=env)
    assert result.returncode == 0 and "fed through the admin API" in result.stdout
