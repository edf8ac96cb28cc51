"""The secret that signs passage links in a deployment of replicas (rag_api.replicas.shared_links),
on qdrant-client's in-memory mode: stores sharing one client stand for the nodes."""

from __future__ import annotations

import threading

import pytest
from qdrant_client import QdrantClient

from rag_api.access.links import SECRET_BYTES, LinkRefused
from rag_api.replicas.shared_links import shared_secret
from rag_api.store.remote import RemoteStore
from rag_api.store.system import SystemDocs


def docs_of(client: QdrantClient) -> SystemDocs:
    return RemoteStore.sharing(client, threading.RLock(), "memory").system


def test_a_reader_before_any_writer_says_when_links_open_then_takes_the_writers_secret() -> None:
    client = QdrantClient(location=":memory:")
    reader = shared_secret(docs_of(client), makes=False)
    with pytest.raises(LinkRefused) as refused:
        reader()
    assert refused.value.message == "passage links open once the deployment's writer has started"
    assert docs_of(client).get("secret", "passage-links") is None  # a reader makes none
    made = shared_secret(docs_of(client), makes=True)()
    assert len(made) == SECRET_BYTES
    assert reader() == made


def test_a_restarted_writer_keeps_the_deployments_secret_and_a_node_keeps_it_once_read() -> None:
    client = QdrantClient(location=":memory:")
    first = shared_secret(docs_of(client), makes=True)()
    secret = shared_secret(docs_of(client), makes=True)
    assert secret() == first  # links given before the restart still open
    client.close()  # Qdrant gone: the secret found stays
    assert secret() == first
