"""A hub with any key set has no open route: RAG_API_KEY alone is the hub's one key, for reads and
writes alike (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import assert_error_shape, hash_collection, write_config

KEY = {"Authorization": "Bearer the-one-key"}
WRITES = [
    ("POST", "/v1/rag/add/document", {"text": "planted", "source": "planted.md"}),
    ("POST", "/v1/rag/upsert/document", {"text": "planted", "source": "planted.md"}),
    ("POST", "/v1/rag/add/chunks", {"items": [{"text": "planted"}]}),
    ("POST", "/v1/rag/remove", {"source_prefix": ""}),
    ("POST", "/v1/rag/reload", {}),
    ("DELETE", "/v1/collections/docs/files/a.md", None),
    ("POST", "/v1/ops/migrate/plan", {"collection": "docs", "provider": "hash", "dim": 32}),
    ("GET", "/v1/indexer/status", None),
]


@pytest.fixture
def one_key(tmp_path: Path, make_settings, serve, engine: str):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nThe refund window is 30 days.\n")
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})
    server = serve(make_settings(config, engine, api_key="the-one-key"))
    with server.client(headers=KEY) as http:
        assert http.post("/v1/rag/reload", json={}).status_code == 200
    return server


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_without_the_key_no_write_is_open(one_key, method: str, path: str, body) -> None:
    with one_key.client() as anonymous:
        refused = anonymous.request(method, path, json=body)
    assert_error_shape(refused, 401, "UNAUTHORIZED")
    with one_key.client(headers=KEY) as http:
        chunks = http.get("/v1/rag/chunks", params={"include_text": "true"}).json()
        assert [c["source"] for c in chunks["items"]] == ["a.md"]  # nothing planted, nothing gone
        assert (Path(one_key.hub.collection("docs").kb_path) / "a.md").exists()


def test_the_one_key_reads_and_writes(one_key) -> None:
    with one_key.client(headers=KEY) as http:
        added = http.post("/v1/rag/add/document", json={"text": "added", "source": "b"})
        assert added.status_code == 200, added.text
        assert http.post("/v1/rag/search", json={"query": "added"}).json()["count"] >= 1
    assert httpx.get(one_key.url + "/v1/overview", headers=KEY).json()["access"] == "admin"
