"""`serve --watch` in one process: the API answers while the watcher indexes; status and metrics."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config


def test_status_and_metrics_of_the_watcher_in_the_app(
    tmp_path: Path, kb_dir: Path, make_settings, serve
) -> None:
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(kb_dir)})
    settings = make_settings(config, watch_debounce_s=0.1, admin_api_key="admin-secret")
    server = serve(settings, watch=True)
    admin = server.client(headers={"Authorization": "Bearer admin-secret"})

    (kb_dir / "a.md").write_text("Starlings flock at dusk.")
    wait_for(lambda: admin.get("/v1/indexer/status").json()["collections"]["notes"]["files"] == 1)
    body = admin.post("/query/notes", json={"query": "starlings", "generate": False}).json()
    assert [s["source"] for s in body["sources"]] == ["a.md"]

    status = admin.get("/v1/indexer/status").json()
    assert status["running"] is True and status["debounce_s"] == 0.1
    row = status["collections"]["notes"]
    assert row["kb"] == str(kb_dir) and row["watching"] is True and row["queue"] == 0
    assert row["last_sync"] and row["last_reconcile"] and row["last_error"] is None
    assert row["counters"]["files_indexed"] == 1 and row["counters"]["events"] >= 1

    rag_status = admin.get("/v1/rag/status", params={"collection": "notes"}).json()
    assert rag_status["chunks"] == 1 and rag_status["indexer"]["running"] is True
    assert rag_status["indexer"]["files"] == 1 and rag_status["indexer"]["queue"] == 0

    metrics = admin.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "rag_indexer_up 1" in metrics.text
    assert 'rag_indexer_files{collection="notes"} 1' in metrics.text
    assert 'rag_indexer_files_indexed_total{collection="notes"} 1' in metrics.text
    assert "# TYPE rag_indexer_chunks_embedded_total counter" in metrics.text

    anonymous = server.client()
    assert_error_shape(anonymous.get("/v1/indexer/status"), 401, "UNAUTHORIZED")
    assert_error_shape(anonymous.get("/metrics"), 401, "UNAUTHORIZED")


def test_without_watch_the_status_says_so(tmp_path: Path, kb_dir: Path, make_settings, serve):
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(kb_dir)})
    client = serve(make_settings(config)).client()

    assert client.get("/v1/indexer/status").json() == {"running": False, "collections": {}}
    assert client.get("/v1/rag/status").json()["indexer"] == {"running": False}
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    assert [s.value for s in families["rag_indexer_up"].samples] == [0]
    assert (
        families["rag_indexer_files"].samples == [] and families["rag_indexer_queue"].samples == []
    )
