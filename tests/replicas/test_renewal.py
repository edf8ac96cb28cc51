"""A reader re-reads the writer's published pointers and the shared keys document in threads of
its own: no request makes those Qdrant round trips (each one waited for them once a second)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from rag_api.store.remote import RemoteStore
from rag_api.store.system import COLLECTION
from tests.conftest import free_port, hash_collection, write_config

KEY = "admin-global-key"


class Watched:
    """The deployment's qdrant-client, noting which thread reads the system collection."""

    def __init__(self, client: QdrantClient) -> None:
        self._client = client
        self.system_reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        if name != "retrieve":
            return found

        def retrieve(collection: str, *args: Any, **kwargs: Any) -> Any:
            if collection == COLLECTION:
                self.system_reads.append(threading.current_thread().name)
            return found(collection, *args, **kwargs)

        return retrieve


@pytest.mark.slow
def test_a_readers_requests_never_read_the_system_collection(
    tmp_path: Path, make_settings, serve
) -> None:
    client, guard = Watched(QdrantClient(location=":memory:")), threading.RLock()
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None)})
    writer_port = free_port()

    def node(name: str, role: str, port: int | None = None) -> Any:
        settings = make_settings(config, "memory", data_dir=tmp_path / name, role=role,
                                 qdrant_url="http://qdrant.test:6333", admin_api_key=KEY,
                                 writer_url=f"http://127.0.0.1:{writer_port}")  # fmt: skip
        from rag_api.hub import Hub

        hub = Hub.open(settings, store=RemoteStore.sharing(client, guard, "one client"))
        return serve(settings, hub, port)

    writer = node("writer", "writer", writer_port)
    with writer.client(headers={"Authorization": f"Bearer {KEY}"}) as http:
        body = {"text": "Refunds take 30 days.", "source": "policy", "collection": "docs"}
        assert http.post("/v1/rag/upsert/document", json=body).status_code == 200
    reader = node("reader", "reader")
    with reader.client(headers={"Authorization": f"Bearer {KEY}"}) as http:
        time.sleep(0.6)  # its renewal has found the collection
        client.system_reads.clear()
        started = time.monotonic()
        while time.monotonic() - started < 2.5:  # past every refresh interval
            found = http.post("/v1/rag/search", json={"query": "refunds", "collection": "docs"})
            assert found.status_code == 200 and found.json()["count"] == 1
    renewing = {"rag-follow", "rag-keys", "rag-writer-lease"}  # the writer renews its lease
    assert client.system_reads and set(client.system_reads) <= renewing, set(client.system_reads)
