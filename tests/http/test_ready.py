"""/ready tells the truth without leaking: 503 naming a collection that cannot be read or written,
credentials in RAG_QDRANT_URL never shown or logged, details only for a caller with the reader key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rag_api.indexing.sync import sync_collection
from tests.conftest import assert_error_shape, free_port, hash_collection, write_config


def test_ready_is_503_naming_a_collection_that_cannot_be_used(
    tmp_path: Path, make_settings, open_hub, serve
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("Refunds are possible within 30 days of purchase.")
    collections = {"docs": hash_collection(kb), "other": hash_collection(kb)}
    settings = make_settings(write_config(tmp_path / "c.yaml", collections))
    hub = open_hub(settings)
    for name in collections:
        sync_collection(hub.collection(name))
    hub.close()
    # same dimension, another model: vectors that mean something else
    collections["other"] = hash_collection(kb, embedder={"model": "hash-other"})
    server = serve(make_settings(write_config(tmp_path / "c.yaml", collections)))
    with server.client() as client:
        error = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert error["message"].startswith("not ready: other: collection 'other' holds vectors")
        assert "docs" not in error["message"]


def test_credentials_in_the_qdrant_url_are_never_shown(
    tmp_path: Path, make_settings, serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(tmp_path)})
    url = f"http://admin:s3cret@127.0.0.1:{free_port()}"  # nothing listens there
    server = serve(make_settings(config, qdrant_url=url))
    with server.client() as client:
        error = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert "Qdrant at http://***@127.0.0.1" in error["message"]
        query = client.post("/query/docs", json={"query": "x"})
        assert_error_shape(query, 503, "STORE_UNAVAILABLE")
        status = client.get("/v1/rag/status")
        for text in (error["message"], query.text, status.text):
            assert "s3cret" not in text and "admin:" not in text
    assert "Qdrant at http://***@" in caplog.text and "s3cret" not in caplog.text


def test_ready_details_need_the_reader_key(tmp_path: Path, make_settings, serve) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(tmp_path)})
    server = serve(make_settings(config, api_key="reader", admin_api_key="admin"))
    with server.client() as client:
        assert client.get("/ready").json() == {
            "status": "ready",
            "role": "all",
            "kb_folders": {},
            "llm": {},
            "rerank": {},
        }
        for key in ("reader", "admin"):
            body = client.get("/ready", headers={"Authorization": f"Bearer {key}"}).json()
            assert body["status"] == "ready" and body["store"].endswith("qdrant")
            assert body["collections"] == ["docs"] and body["disk"]["free_mb"] > 0
        server.hub.store.disk.min_free = 1 << 60  # no disk has that much room
        public = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert public["message"] == "not ready: disk: insufficient storage"
        private = client.get("/ready", headers={"Authorization": "Bearer reader"}).json()
        assert private["error"]["message"].startswith("not ready: disk: not enough free disk")
        assert str(tmp_path) in private["error"]["message"]


def test_an_upstream_error_never_names_credentials(
    tmp_path: Path, make_settings, serve, fake_ollama
) -> None:
    authority = fake_ollama.url.split("://", 1)[1]
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(embedder=embedder)})
    server = serve(make_settings(config, ollama_url=f"http://admin:s3cret@{authority}"))
    fake_ollama.stop()
    with server.client() as client:
        error = assert_error_shape(client.get("/ready"), 503, "NOT_READY")
        assert f"Ollama at http://***@{authority}" in error["message"], error
