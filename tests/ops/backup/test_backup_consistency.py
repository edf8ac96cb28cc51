"""A backup taken while writes go on is a state the collection really had: a 300-chunk document
rewritten in a loop is backed up (and restored) in one version, never a mix; a restore killed
half-way leaves the live collection as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.take import take_backup
from tests.conftest import REPO, cli_env, hash_collection, wait_for, write_config
from tests.support.backup_world import populate, state
from tests.support.writes import replace_source

SOURCE = "api/big"
API = {"origin": "api", "persist": True}
ROUNDS_S = 8.0  # the test's bound in time


def version(v: int, n: int = 300) -> list[Chunk]:
    return [Chunk(f"Version {v}: paragraph {i} on otters and herons.", SOURCE, i) for i in range(n)]


def versions_in(points: list) -> set[tuple[str, int]]:
    """(version tag, generation) of each chunk of the big document."""
    return {(p.payload["text"].split(":")[0], p.payload["gen"]) for p in points}


@pytest.fixture
def settings(tmp_path, make_settings, engine):
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(dim=32)})
    return make_settings(config, engine)


@pytest.mark.parametrize("in_server", [False, True], ids=["cli", "server"])
@pytest.mark.slow
def test_backups_beside_a_writer_hold_one_whole_version(
    settings, tmp_path: Path, in_server: bool
) -> None:  # in the server an embedded shard is copied, and read by a writer process
    hub = Hub.open(settings)
    try:
        collection = hub.collection("docs")
        replace_source(collection, SOURCE, version(0), API)
        stop, written = threading.Event(), [0]

        def writer() -> None:
            v = 1
            while not stop.is_set():
                replace_source(collection, SOURCE, version(v), API)
                written[0], v = v, v + 1

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        seen, deadline, folders = set(), time.monotonic() + ROUNDS_S, []
        try:
            # at least two backups however slow the machine: the writer must run between them
            while len(folders) < 2 or (time.monotonic() < deadline and len(folders) < 12):
                folder = Path(take_backup(hub, to=tmp_path / "b", in_server=in_server).path)
                entry = fmt.read_manifest(folder)["collections"]["docs"]
                header = fmt.read_header(folder, "docs", entry)
                points = [
                    p for p in fmt.points_of(folder, entry, header) if p.payload["source"] == SOURCE
                ]
                assert len(points) == 300
                tags = versions_in(points)
                assert len(tags) == 1, f"a mix of versions: {sorted(tags)[:4]}"
                seen |= tags
                folders.append(folder)
        finally:
            stop.set()
            thread.join(timeout=30)
        assert written[0] >= 2 and len(seen) >= 2  # the writer really ran between backups
        restored = restore_backup(hub, folders[-1]).restored[0]
        after = [
            p
            for page in hub.store.export(restored.live, 1000)
            for p in page
            if p.payload["source"] == SOURCE
        ]
        assert len(after) == 300 and len(versions_in(after)) == 1
    finally:
        hub.close()


@pytest.mark.parametrize("engine", ["edge"])  # a Qdrant server's optimize is its own affair
def test_an_optimize_waits_while_writes_are_held(settings) -> None:
    # it rewrites the segments a backup copies under the hold: it is a write to that gate
    hub = Hub.open(settings)
    try:
        collection = hub.collection("docs")
        replace_source(collection, SOURCE, version(0, 20), API)
        done = threading.Event()
        optimizer = threading.Thread(target=lambda: (collection.optimize(), done.set()))
        with collection.writes_held():
            optimizer.start()
            assert not done.wait(1.0)
        optimizer.join(timeout=60)
        assert done.is_set()
    finally:
        hub.close()


@pytest.mark.parametrize("engine", ["edge"])
@pytest.mark.slow
def test_a_restore_killed_half_way_leaves_the_live_collection(settings, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    hub = Hub.open(settings)
    try:
        collection = hub.collection("docs")
        populate(collection, kb)
        replace_source(collection, SOURCE, version(0, 6000), API)
        folder = take_backup(hub, to=tmp_path / "b").path
        before = state(hub, "docs")
    finally:
        hub.close()
    env = cli_env({"RAG_CONFIG": str(settings.config), "RAG_DATA_DIR": str(settings.data_dir),
                   "RAG_QDRANT_URL": ""})  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "rag_api", "restore", folder, "--yes"],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: (settings.qdrant_path / "docs__v2" / "edge_config.json").is_file() or child.poll() is not None,
                 timeout=60, interval=0.005)  # fmt: skip
        assert child.poll() is None, "the restore ended before it could be killed"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    hub = Hub.open(settings)
    try:
        assert hub.store.alias_target("docs") == "docs__v1"
        assert state(hub, "docs") == before
        again = restore_backup(hub, Path(folder)).restored[0]
        assert again.live == "docs__v3" and again.points == len(before)
    finally:
        hub.close()
