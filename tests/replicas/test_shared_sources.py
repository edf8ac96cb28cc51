"""The sources' state of a deployment of replicas, kept in Qdrant's system collection
(rag_api.replicas.shared_sources), on qdrant-client's in-memory mode: two stores sharing one
client stand for a writer and the writer that replaces it. tests/sources/test_replicas.py carries
a real crawl on from one writer to the next."""

from __future__ import annotations

import threading

from qdrant_client import QdrantClient

from rag_api.replicas.shared_sources import SharedStates
from rag_api.sources.state import SourceState
from rag_api.store.remote import RemoteStore


def states_of(client: QdrantClient) -> SharedStates:
    return SharedStates(RemoteStore.sharing(client, threading.RLock(), "memory").system)


def test_a_new_writer_loads_the_state_the_last_one_saved_per_collection_and_source() -> None:
    client = QdrantClient(location=":memory:")
    record = SourceState(
        fingerprint="f1",
        state={"commit": "abc123", "links": ["https://example.test/a"]},
        last={"status": "done"},
        last_at=1.5,
        last_ok_at=1.0,
        failures=2,
    )
    states_of(client).save("docs", "site", record)
    states_of(client).save("docs", "repo", SourceState(fingerprint="f2"))
    again = states_of(client)
    assert again.load("docs", "site") == record
    assert again.load("docs", "repo") == SourceState(fingerprint="f2")
    assert again.load("other", "site") == SourceState()  # another collection's source
    assert again.load("docs", "bucket") == SourceState()  # never saved


def test_a_save_replaces_the_source_s_record() -> None:
    states = states_of(QdrantClient(location=":memory:"))
    states.save("docs", "site", SourceState(fingerprint="f1", failures=1))
    states.save("docs", "site", SourceState(fingerprint="f1", failures=0, last_ok_at=9.0))
    assert states.load("docs", "site") == SourceState(fingerprint="f1", last_ok_at=9.0)
