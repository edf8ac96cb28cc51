"""What RAG_ROLE makes of a hub's parts (rag_api.replicas.role), without starting a hub: nodes on
stores sharing one qdrant-client in-memory client, their data dirs on tmp_path."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_api import payload
from rag_api.access.keys import KeysFile
from rag_api.config import parse_config
from rag_api.embedding.embedders import Embedders
from rag_api.errors import AnotherWriter, ConfigError
from rag_api.indexing.chunking import Chunk
from rag_api.llm.rerankers import Rerankers
from rag_api.openai_compat.stored import StoredResponse
from rag_api.points.collection import EVERYTHING, Collection
from rag_api.replicas import lease
from rag_api.replicas.role import Role, check, describe, keys_file
from rag_api.settings import Settings
from rag_api.sources.state import SourceState
from rag_api.store import PointData, open_store
from rag_api.store.remote import RemoteStore
from tests.conftest import hash_collection
from tests.support.writes import replace_source

WRITER = "http://writer.test:8000"


@pytest.fixture(autouse=True)
def no_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease, "SETTLE_S", 0.0)


@pytest.fixture
def client() -> QdrantClient:
    return QdrantClient(location=":memory:")


def settings_of(tmp_path: Path, role: str, name: str = "", **more: object) -> Settings:
    found = {"qdrant_url": "http://qdrant.test:6333", "role": role, "writer_url": WRITER, **more}
    return Settings(data_dir=tmp_path / (name or role), **found)


def node(tmp_path: Path, client: QdrantClient, role: str, name: str = "") -> Role:
    store = RemoteStore.sharing(client, threading.RLock(), "qdrant.test")
    return Role(settings_of(tmp_path, role, name), store)


def collection_of(client: QdrantClient, role: Role) -> Collection:
    entry = {"default_collection": "docs", "collections": {"docs": hash_collection(None)}}
    cfg = parse_config(entry).collections["docs"]
    s = role.settings
    store = RemoteStore.sharing(client, threading.RLock(), "qdrant.test")
    return Collection("docs", cfg, None, store, Embedders(s), Rerankers(s))


def test_a_role_this_process_cannot_take_is_refused_before_anything_opens(tmp_path: Path) -> None:
    for role in ("writer", "reader"):
        with pytest.raises(ConfigError) as refused:
            check(Settings(data_dir=tmp_path, role=role, writer_url=WRITER))
        said = refused.value.message
        assert said.startswith(f"RAG_ROLE={role} needs RAG_QDRANT_URL: the embedded engine is one")
        assert "process's own store, so it has no readers or writer beside it" in said
        assert said.endswith("; use RAG_ROLE=all, or a Qdrant server or cluster")
    with pytest.raises(ConfigError) as refused:
        check(settings_of(tmp_path, "reader", writer_url=None))
    assert refused.value.message.startswith("RAG_ROLE=reader needs RAG_WRITER_URL:")
    check(Settings(data_dir=tmp_path))  # all, embedded
    check(settings_of(tmp_path, "writer", writer_url=None))  # a writer needs no RAG_WRITER_URL
    check(settings_of(tmp_path, "reader"))


def test_the_start_line_says_the_role() -> None:
    assert describe(Settings(role="reader", writer_url=WRITER, qdrant_url="http://q:6333")) == (
        f"a reader (writes go to {WRITER})"
    )
    assert describe(Settings(role="writer", qdrant_url="http://q:6333")) == "the writer"
    assert describe(Settings()) == "the only process (RAG_ROLE=all)"


def test_replicas_share_keys_responses_source_states_and_link_secret(
    tmp_path: Path, client: QdrantClient
) -> None:
    writer, reader = node(tmp_path, client, "writer"), node(tmp_path, client, "reader")
    key, _ = writer.keys().create("ci", ["docs"], [])
    assert [k.id for k in reader.keys().load()] == [key.id]
    response = {"id": "resp_" + "a" * 32, "output": []}
    writer.responses().save(StoredResponse("docs", 1e10, response, []))
    assert reader.responses().find(response["id"]).response == response
    assert not (tmp_path / "writer" / "responses").exists()  # in Qdrant, not on the writer's disk
    writer.source_states().save("docs", "site", SourceState("f", {"cursor": 7}))
    assert reader.source_states().load("docs", "site").state == {"cursor": 7}
    assert not (tmp_path / "writer" / "sources").exists()
    made = writer.link_secret()()  # the writer makes it; a reader reads it
    assert reader.link_secret()() == made
    assert not (tmp_path / "writer" / "passage-links.key").exists()


def test_a_single_process_keeps_its_parts_in_its_data_dir(tmp_path: Path) -> None:
    alone = Role(Settings(data_dir=tmp_path / "all"), RemoteStore(":memory:"))
    alone.keys().create("ci", ["docs"], [])
    assert alone.settings.keys_path.is_relative_to(tmp_path / "all")
    assert alone.settings.keys_path.exists()  # the node's own keys file
    secret = alone.link_secret()()
    assert (tmp_path / "all" / "passage-links.key").read_bytes() == secret
    given = Role(settings_of(tmp_path, "writer", link_secret="s3cret"), RemoteStore(":memory:"))
    assert given.link_secret()() == b"s3cret"  # RAG_LINK_SECRET wins on replicas too
    response = {"id": "resp_" + "b" * 32, "output": []}
    alone.responses().save(StoredResponse("docs", 1e10, response, []))
    assert list((tmp_path / "all").rglob("resp_*.json"))
    alone.source_states().save("docs", "site", SourceState("f", {"cursor": 7}))
    assert list((tmp_path / "all" / "sources").rglob("*"))


def test_the_writer_takes_the_lease_and_publishes_a_reader_follows_and_both_stop(
    tmp_path: Path, client: QdrantClient
) -> None:
    writer, reader = node(tmp_path, client, "writer"), node(tmp_path, client, "reader")
    written, followed = collection_of(client, writer), collection_of(client, reader)
    writer.join([written])
    written.writable()
    writer.start([written])
    try:
        assert writer.docs.get("lease", "writer") is not None
        assert writer.docs.get("collection", "docs")["version"][1] == 0  # published at start
        with pytest.raises(AnotherWriter):
            node(tmp_path, client, "writer", "second").start([])
        written.delete(EVERYTHING)
        assert writer.docs.get("collection", "docs")["version"][1] == 1  # each write published
        reader.join([followed])
        reader.start([followed])
        assert followed.renewed and followed.published[1] == 1
        reader.stop()
        assert not followed.renewed
    finally:
        writer.stop()
    assert writer.docs.get("lease", "writer") is None  # given back: the next writer starts
    following = node(tmp_path, client, "writer", "next")
    following.start([])
    following.stop()


def unreadable(role: Role) -> Collection:
    """A collection `gone` on a Qdrant whose connection is closed: nothing of it can be read."""
    gone_client = QdrantClient(location=":memory:")
    gone_client.close()
    entry = {"default_collection": "gone", "collections": {"gone": hash_collection(None)}}
    s = role.settings
    store = RemoteStore.sharing(gone_client, threading.RLock(), "gone.test")
    cfg = parse_config(entry).collections["gone"]
    return Collection("gone", cfg, None, store, Embedders(s), Rerankers(s))


def test_the_keys_cli_on_a_replica_reads_the_deployments_keys(tmp_path: Path) -> None:
    writer = settings_of(tmp_path, "writer", qdrant_url=":memory:")
    key, _ = KeysFile(writer.keys_path).create("ci", ["docs"], [])
    assert [k.id for k in keys_file(writer).load()] == [key.id]  # the writer imports its file
    reader = settings_of(tmp_path, "reader", qdrant_url=":memory:")
    KeysFile(reader.keys_path).create("own", ["docs"], [])
    keys = keys_file(reader)
    assert keys.load() == [] and keys.closed  # a reader never imports its node's file


def test_an_all_process_on_a_qdrant_server_holds_the_lease_but_publishes_nothing(
    tmp_path: Path, client: QdrantClient
) -> None:
    alone = node(tmp_path, client, "all")
    collection = collection_of(client, alone)
    alone.join([collection])
    collection.writable()
    alone.start([collection])
    try:
        with pytest.raises(AnotherWriter):
            node(tmp_path, client, "writer").start([])  # no writer beside it
        collection.delete(EVERYTHING)
        assert alone.docs.get("collection", "docs") is None  # no readers to publish for
    finally:
        alone.stop()
    edge = open_store(Settings(data_dir=tmp_path / "edge"))
    try:
        embedded = Role(Settings(data_dir=tmp_path / "edge"), edge)  # no system documents
        embedded.join([])
        embedded.start([])  # no lease to take: the process is the deployment
        embedded.stop()
        assert embedded.docs is None
    finally:
        edge.close()


def test_a_writer_after_a_dead_one_recovers_each_collection_and_says_which_it_could_not(
    tmp_path: Path, client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    writer = node(tmp_path, client, "writer")
    writer.docs.put("lease", "writer", {"id": "dead", "host": "h", "pid": 1, "renewed": 0.0})
    gone = unreadable(writer)
    writer.join([gone])
    writer.start([gone])
    try:
        assert any(
            m.startswith("gone: not recovered: Qdrant at gone.test") for m in caplog.messages
        )
    finally:
        writer.stop()


def test_a_collection_after_one_that_could_not_be_recovered_is_still_recovered(
    tmp_path: Path, client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A replacement the dead writer cut short (a document holding two generations) is completed
    by the next writer, though a collection before it could not be read."""
    writer = node(tmp_path, client, "writer")
    before = collection_of(client, writer)
    before.writable()
    provenance = {payload.ORIGIN: payload.FROM_API}
    texts = ["Old tides one.", "Old tides two.", "Old tides three."]
    replace_source(before, "doc", [Chunk(t, "doc", n) for n, t in enumerate(texts)], provenance)
    physical = before.info(refresh=True).physical
    old = list(before.store.iter_records(physical, with_dense=True))
    replace_source(before, "doc", [Chunk("New tides.", "doc", 0)], provenance)
    kept = {r.id for r in before.store.iter_records(physical)}
    torn = [
        PointData(r.id, r.dense, r.payload, before.sparse.document(r.payload["text"]))
        for r in old
        if r.id not in kept
    ]
    before.store.upsert(physical, torn)  # what a crash between overwrite and delete leaves
    writer.docs.put("lease", "writer", {"id": "dead", "host": "h", "pid": 1, "renewed": 0.0})
    gone = unreadable(writer)
    docs = collection_of(client, writer)
    writer.join([gone, docs])
    writer.start([gone, docs])
    try:
        assert "docs: 1 torn replacements completed" in caplog.messages
        texts_now = [r.payload["text"] for r in docs.store.iter_records(physical)]
        assert texts_now == ["New tides."]
    finally:
        writer.stop()
