"""Backups while the server owns the embedded store: `rag-hub backup` and `restore` run inside it
(admin key) while it keeps answering, and /v1/ops/backup(s) take and list backups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.store import Selector
from tests.conftest import assert_error_shape, hash_collection, run_cli, wait_for, write_config
from tests.support.backup_world import populate, rankings, state

KEY = "admin-secret"


@pytest.mark.slow
def test_backup_and_restore_through_the_server(tmp_path: Path, make_settings, serve) -> None:
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, dim=64)})
    server = serve(make_settings(config, "edge", admin_api_key=KEY))
    hub = server.hub
    populate(hub.collection("docs"), kb)
    before, ranked = state(hub, "docs"), rankings(hub)
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data"),
           "RAG_ADMIN_API_KEY": KEY, "RAG_QDRANT_URL": ""}  # fmt: skip

    took = run_cli("backup", "--json", env=env)
    assert took.returncode == 0, took.stderr
    result = json.loads(took.stdout)
    assert result["collections"]["docs"]["points"] == len(before)
    assert Path(result["path"]).parent == tmp_path / "data" / "backups"

    with server.client(headers={"Authorization": f"Bearer {KEY}"}) as client:
        listed = client.get("/v1/ops/backups").json()["backups"]
        assert [b["path"] for b in listed] == [result["path"]] and listed[0]["bytes"] > 0
        started = client.post("/v1/ops/backup", json={"collections": ["docs"]})
        assert started.status_code == 202 and started.headers["location"].endswith(
            started.json()["id"]
        )
        # the job's writer process runs niced: on a busy machine it waits for the cores
        done = wait_for(lambda: (j := client.get(started.headers["location"]).json())["status"]
                        in ("done", "failed") and j, timeout=120)  # fmt: skip
        assert done["status"] == "done", done
        assert client.post("/v1/ops/backup", json={"collections": ["nope"]}).status_code == 404
    with server.client() as anonymous:
        assert_error_shape(anonymous.post("/v1/ops/backup", json={}), 401, "UNAUTHORIZED")
        assert_error_shape(anonymous.get("/v1/ops/backups"), 401, "UNAUTHORIZED")

    hub.collection("docs").delete(Selector(source_prefix="api/"))  # the mistake
    restored = run_cli("restore", result["path"], "--yes", env=env)
    assert restored.returncode == 0, restored.stderr
    assert "restored into docs__v2 (docs__v1 is kept)" in restored.stdout
    assert state(hub, "docs").keys() == before.keys() and rankings(hub) == ranked

    broken = Path(result["path"]) / "collections" / "docs.jsonl.gz"
    broken.write_bytes(broken.read_bytes()[:100])
    refused = run_cli("restore", result["path"], "--yes", env=env)
    assert refused.returncode == 1 and "truncated or altered" in refused.stderr
    assert hub.store.alias_target("docs") == "docs__v2"
