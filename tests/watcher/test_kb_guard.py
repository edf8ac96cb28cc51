"""The watcher over a missing kb folder or a mass removal: logs once, keeps the chunks, reports."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import stored_files, sync_collection
from rag_api.watcher import Watcher
from tests.conftest import hash_collection, wait_for, write_config
from tests.watcher.conftest import stop


def test_a_mistyped_folder_keeps_chunks_logs_once_and_retries(
    tmp_path: Path, make_settings, caplog: pytest.LogCaptureFixture
) -> None:
    kb = tmp_path / "docs"
    kb.mkdir()
    for n in range(3):
        (kb / f"n{n}.md").write_text(f"Kestrel number {n} hovers.")
    hub = Hub.open(make_settings(write_config(tmp_path / "c.yaml", {"notes": hash_collection(kb)})))
    sync_collection(hub.collection("notes"))
    hub.close()

    typo = write_config(tmp_path / "typo.yaml", {"notes": hash_collection(tmp_path / "dosc")})
    hub = Hub.open(make_settings(typo))
    caplog.set_level(logging.INFO, logger="rag_api.watcher")
    watcher = Watcher(hub, debounce_s=0.05, rescan_s=0.1, retry_max_s=0.1).start()
    try:
        row = lambda: watcher.status()["collections"]["notes"]  # noqa: E731
        wait_for(lambda: row()["counters"]["errors"] >= 3)  # it keeps retrying
        assert row()["kb_folder"].startswith("kb folder missing")
        assert "dosc" in row()["last_error"]["message"]
        assert len(stored_files(hub.collection("notes"))) == 3
        missing = [
            r for r in caplog.records if "dosc" in r.getMessage() and r.levelno >= logging.WARNING
        ]
        assert len(missing) == 1, [r.getMessage() for r in missing]

        shutil.copytree(kb, tmp_path / "dosc")  # the disk is mounted: indexing resumes
        wait_for(lambda: row()["last_reconcile"] is not None and row()["kb_folder"] is None)
        assert len(stored_files(hub.collection("notes"))) == 3
    finally:
        stop(watcher)


def test_a_mass_removal_at_reconcile_is_held_and_reported(tmp_path: Path, start_watcher) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(10):
        (kb / f"n{n}.md").write_text(f"Plover number {n} runs.")
    watcher = start_watcher(kb)
    wait_for(lambda: len(stored_files(watcher.hub.collection("notes"))) == 10)
    stop(watcher)
    for n in range(9):
        (kb / f"n{n}.md").unlink()  # while nobody watched: a reconcile finds them gone

    watcher = start_watcher(kb)
    row = lambda: watcher.status()["collections"]["notes"]  # noqa: E731
    wait_for(lambda: row()["held"] is not None)
    assert "9 of 10 files" in row()["held"]
    assert len(stored_files(watcher.hub.collection("notes"))) == 10

    (kb / "n9.md").unlink()  # one deletion the watcher sees happen is applied at once
    wait_for(lambda: "n9.md" not in stored_files(watcher.hub.collection("notes")))
