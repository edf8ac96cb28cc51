"""The scoped keys of a deployment of replicas, kept in Qdrant's system collection
(rag_api.replicas.shared_keys), on qdrant-client's in-memory mode: two stores sharing one client
stand for the writer's node and a reader's; each node has its own keys file on tmp_path."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_api.access.keys import KeysFile
from rag_api.errors import ConfigError, StoreUnavailable
from rag_api.replicas.shared_keys import SharedKeys
from rag_api.store.remote import RemoteStore
from rag_api.store.system import SystemDocs
from tests.support.replicas import Outage, logged


@pytest.fixture
def client() -> QdrantClient:
    return QdrantClient(location=":memory:")


def docs_of(client: QdrantClient) -> SystemDocs:
    return RemoteStore.sharing(client, threading.RLock(), "memory").system


def test_the_writer_shares_its_nodes_keys_file_and_a_reader_knows_them(
    tmp_path: Path, client: QdrantClient
) -> None:
    node_file = KeysFile(tmp_path / "writer" / "keys.json")
    key, _ = node_file.create("ci", ["docs"], [])
    writer = SharedKeys(docs_of(client), tmp_path / "writer" / "keys.json", imports=True)
    assert str(writer) == "Qdrant (keys)"  # where an operator is told the keys live
    assert writer.stamp() == (1, False)
    assert [k.id for k in writer.load()] == [key.id]
    assert not writer.closed
    reader = SharedKeys(docs_of(client), tmp_path / "reader" / "keys.json", imports=False)
    assert reader.stamp() == (1, False) and not reader.closed
    assert [k.id for k in reader.load()] == [key.id]
    (tmp_path / "writer" / "keys.json").unlink()  # imported once: Qdrant's copy is the keys now
    again = SharedKeys(docs_of(client), tmp_path / "writer" / "keys.json", imports=True)
    assert [k.id for k in again.load()] == [key.id] and again.stamp() == (1, False)


def test_a_reader_before_any_writer_refuses_every_key_until_the_writer_starts(
    tmp_path: Path, client: QdrantClient
) -> None:
    reader = SharedKeys(docs_of(client), tmp_path / "reader" / "keys.json", imports=False)
    closed = reader.stamp()
    assert reader.closed and reader.load() == []
    assert docs_of(client).get("keys", "scoped") is None  # a reader never creates the document
    writer = SharedKeys(docs_of(client), tmp_path / "none" / "keys.json", imports=True)
    assert writer.load() == [] and not writer.closed  # no keys file: none, and open
    assert reader.stamp() != closed and not reader.closed


def test_a_key_created_or_revoked_on_one_node_changes_the_stamp_every_node_reads(
    tmp_path: Path, client: QdrantClient
) -> None:
    writer = SharedKeys(docs_of(client), tmp_path / "w.json", imports=True)
    reader = SharedKeys(docs_of(client), tmp_path / "r.json", imports=False)
    before = reader.stamp()
    reader.load()
    key, _ = writer.create("ops", [], [], admin=True, expires=timedelta(days=1))
    after = reader.stamp()
    assert after != before and after == (2, False)
    assert [k.id for k in reader.load()] == [key.id]
    writer.revoke(key.id)
    assert reader.stamp() == (3, False)
    assert reader.load()[0].revoked is not None
    writer.create("two", ["docs"], [])
    assert len(reader.load()) == 2  # a load without a stamp reads the document anew


def test_while_qdrant_cannot_be_read_the_keys_last_read_stay_but_a_first_read_fails(
    tmp_path: Path, client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    writer = SharedKeys(docs_of(client), tmp_path / "w.json", imports=True)
    key, _ = writer.create("ci", ["docs"], [])
    outage = Outage()
    reader = SharedKeys(SystemDocs(client, outage), tmp_path / "r.json", imports=False)
    outage.down = True
    with pytest.raises(StoreUnavailable):
        reader.stamp()  # nothing read yet: the start fails rather than open or refuse blindly
    outage.down = False
    stamp = reader.stamp()
    assert [k.id for k in reader.load()] == [key.id]
    outage.down = True
    assert reader.stamp() == stamp  # unchanged: the keys are not re-loaded, they stay in force
    assert logged(caplog, "scoped keys not re-read: Qdrant at qdrant.test unavailable")
    assert not reader.closed


def test_a_document_that_is_not_a_keys_file_is_named_as_qdrants(
    tmp_path: Path, client: QdrantClient
) -> None:
    docs_of(client).put("keys", "scoped", {"revision": 4})
    reader = SharedKeys(docs_of(client), tmp_path / "r.json", imports=False)
    assert reader.stamp() == (4, False)
    with pytest.raises(ConfigError, match=r"^Qdrant \(keys\): not a keys file"):
        reader.load()
