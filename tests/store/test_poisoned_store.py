"""A collection whose embedded store holds a point the engine cannot read back (metadata nested past
its decoder limit, as versions before rag_api.metadata accepted): it answers 503 STORE_CORRUPTED in
the error shape, the server still starts and serves the other collections, `rag-hub check` reports
it and `--repair` rebuilds it from the readable points and its kb folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from rag_api.payload import point_id
from rag_api.search.retrieval import SearchRequest, search
from rag_api.store import PointData
from rag_api.store.edge import EdgeStore
from tests.conftest import (
    LiveServer,
    assert_error_shape,
    cli_env,
    hash_collection,
    run_cli,
    write_config,
)


def nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


def poison(hub: Hub, name: str) -> None:
    """Write, below the hub's checks, what an older hub let through its admin API."""
    physical = hub.collection(name).writable().physical
    payload = {"text": "poison", "source": "poison", "chunk_index": 0, "origin": "api"}
    payload |= {"persist": True, "seq": 99, "metadata": {"k": nested(126)}}
    hub.store.upsert(physical, [PointData(point_id(name, "poison", 0), np.ones(64), payload)])


@pytest.fixture
def settings(tmp_path: Path, make_settings):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "zebras.md").write_text("# Zebras\n\nZebras graze next to wildebeest.")
    collections = {"docs": hash_collection(kb), "other": hash_collection()}
    return make_settings(write_config(tmp_path / "c.yaml", collections))


def rag(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.url + "/v1/rag", timeout=60)


def test_a_poisoned_collection_fails_alone_in_the_error_shape(settings, serve) -> None:
    server = serve(settings)
    with rag(server) as http:
        http.post("/reload", json={})
        http.post("/add/document", json={"text": "an API note", "source": "note"})
        poison(server.hub, "docs")
        for response in (
            http.get("/status"),
            http.get("/sources"),
            http.post("/search", json={"query": "zebras"}),
            http.post("/reload", json={}),
        ):
            assert_error_shape(response, 503, "STORE_CORRUPTED")
        assert "rag-hub check --repair" in http.get("/status").json()["error"]["message"]
    server.stop()
    again = serve(settings)  # the old store's log holds the poisoned write: replayed at open
    with rag(again) as http:
        assert_error_shape(http.get("/status"), 503, "STORE_CORRUPTED")
        other = http.post("/add/document", json={"text": "still fine", "collection": "other"})
        assert other.status_code == 200, other.text
        assert http.get("/status", params={"collection": "other"}).json()["chunks"] == 1
    listing = {row["name"]: row for row in again.client().get("/collections").json()["collections"]}
    assert listing["docs"]["error"]["code"] == "STORE_CORRUPTED" and listing["other"]["points"] == 1


@pytest.mark.slow
def test_check_reports_it_and_repair_rebuilds_it(settings, open_hub) -> None:
    hub = open_hub(settings)
    sync_collection(hub.collection("docs"))
    kept = {"text": "an API note", "source": "note", "chunk_index": 0, "metadata": {"k": 1}}
    physical = hub.collection("docs").writable().physical
    hub.store.upsert(physical, [PointData(point_id("docs", "note", 0), np.ones(64), kept)])
    poison(hub, "docs")
    (finding,) = run_check(hub, "docs").as_dict()["findings"]
    assert (finding["check"], finding["repairable"]) == ("store", True)
    hub.close()  # the CLI opens the store again: the poisoned write is replayed from its log
    env = {"RAG_CONFIG": str(settings.config), "RAG_DATA_DIR": str(settings.data_dir)}
    repaired = run_cli("check", "--repair", env=env)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "rebuilt the store: 2 points kept, 1 unreadable dropped" in repaired.stdout
    hub = open_hub(settings)
    assert run_check(hub).exit_code == 0
    assert hub.store.sources(physical) == {"zebras.md": 1, "note": 1}
    hits = search(hub.collection("docs"), SearchRequest("zebras")).passages
    assert hits[0].source == "zebras.md"
    quarantined = list((settings.data_dir / "qdrant" / ".quarantine").iterdir())
    assert len(quarantined) == 1


CRASH_AFTER_POISON = """
import os, sys
from pathlib import Path
import numpy as np
from rag_api.store import PointData
from rag_api.store.edge import EdgeStore
from tests.store.test_poisoned_store import nested
store = EdgeStore(Path(sys.argv[1]))
store.create_physical("docs__v1", 4)
write = lambda pid, payload: store.upsert("docs__v1", [PointData(pid, np.ones(4), payload)])
write("00000000-0000-0000-0000-00000000000a", {"text": "before"})
write("00000000-0000-0000-0000-00000000000b", {"text": "poison", "metadata": {"k": nested(126)}})
write("00000000-0000-0000-0000-00000000000c", {"text": "after"})
os._exit(0)  # killed: nothing flushed, every write lives in the write-ahead log only
"""


@pytest.mark.slow
def test_a_crash_after_the_poison_keeps_the_writes_before_it(tmp_path: Path) -> None:
    root = tmp_path / "qdrant"
    crash = [sys.executable, "-c", CRASH_AFTER_POISON, str(root)]
    subprocess.run(crash, check=True, env=cli_env(), timeout=120)
    store = EdgeStore(root)
    try:
        rebuilt = store.rebuild("docs__v1")
        assert [r.payload["text"] for r in store.iter_records("docs__v1")] == ["before"]
        assert (rebuilt.kept, rebuilt.replayed) == (1, False)
        store.upsert("docs__v1", [PointData(point_id("d", "new", 0), np.ones(4), {"text": "new"})])
    finally:
        store.close()
    reopened = EdgeStore(root)
    try:
        assert sorted(r.payload["text"] for r in reopened.iter_records("docs__v1")) == [
            "before",
            "new",
        ]
    finally:
        reopened.close()
