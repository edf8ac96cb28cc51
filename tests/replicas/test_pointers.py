"""What the writer publishes of each collection and its readers follow (rag_api.replicas.pointers),
on qdrant-client's in-memory mode: two stores sharing one client stand for the writer's node and
a reader's. A reader's renewal runs every RENEW_S, driven here at 10 ms."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_api.config import parse_config
from rag_api.embedding.embedders import Embedders
from rag_api.llm.rerankers import Rerankers
from rag_api.points.collection import EVERYTHING, Collection
from rag_api.replicas import pointers
from rag_api.replicas.pointers import Follower, Following, Publisher
from rag_api.settings import Settings
from rag_api.store.remote import RemoteStore
from rag_api.store.system import SystemDocs
from tests.conftest import hash_collection
from tests.support.replicas import Outage, exits, logged, until


class Deployment:
    """One Qdrant; the writer's collection `docs` and a reader's, on stores of their own."""

    def __init__(self, tmp_path: Path, reader_model: str = "hash-test") -> None:
        self.client, guard = QdrantClient(location=":memory:"), threading.RLock()
        self.tmp_path = tmp_path
        self.writer_store = RemoteStore.sharing(self.client, guard, "writer")
        self.reader_store = RemoteStore.sharing(self.client, guard, "reader")
        self.writer = self.collection(self.writer_store, "hash-test")
        self.reader = self.collection(self.reader_store, reader_model)

    def collection(self, store: RemoteStore, model: str) -> Collection:
        entry = hash_collection(None, embedder={"model": model})
        cfg = parse_config(
            {"default_collection": "docs", "collections": {"docs": entry}}
        ).collections["docs"]
        settings = Settings(data_dir=self.tmp_path / "data", qdrant_url=":memory:")
        return Collection("docs", cfg, None, store, Embedders(settings), Rerankers(settings))

    def publishing(self) -> Publisher:
        """The writer's collection created and published, as a writer starts."""
        publisher = Publisher(self.writer_store.system)
        self.writer.publish = publisher.publish
        self.writer.writable()
        publisher.publish(self.writer)
        return publisher

    def outage(self) -> tuple[SystemDocs, Outage]:
        """The system documents through a connection that can go down."""
        outage = Outage()
        return SystemDocs(self.client, outage), outage


@pytest.fixture
def fast_renewal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pointers, "RENEW_S", 0.01)


def test_each_write_section_changes_the_published_version_and_readers_take_the_writers_embedder(
    tmp_path: Path,
) -> None:
    deployment = Deployment(tmp_path, reader_model="hash-older")
    writer, reader = deployment.writer, deployment.reader
    publisher = Publisher(deployment.writer_store.system)
    writer.publish = publisher.publish
    follower = Follower(deployment.reader_store.system)
    publisher.publish(writer)  # no collection yet: nothing to follow, the reader reads the alias
    assert follower.published("docs") is None
    physical = writer.writable().physical
    publisher.publish(writer)  # the writer's start
    first = follower.published("docs")
    assert first is not None and first.physical == physical
    assert first.embedder == writer.cfg.embedder and first.version == (publisher.process, 0)
    writer.delete(EVERYTHING)
    writer.delete(EVERYTHING)
    assert follower.published("docs").version == (publisher.process, 2)
    reader.follow = follower.published
    assert reader.info().physical == physical
    assert reader.cfg.embedder.model == "hash-test"  # the writer's vectors, never its own model
    assert reader.version()[2] == (publisher.process, 2)
    restarted = Publisher(deployment.writer_store.system)
    restarted.publish(writer)  # a new process counts from its own start: still news to readers
    assert restarted.process != publisher.process
    assert follower.published("docs").version == (restarted.process, 2)


def test_a_write_whose_publish_cannot_reach_qdrant_stands_and_the_next_one_is_published(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deployment = Deployment(tmp_path)
    docs, outage = deployment.outage()
    publisher = Publisher(docs)
    deployment.writer.publish = publisher.publish
    deployment.writer.writable()
    publisher.publish(deployment.writer)
    outage.down = True
    assert deployment.writer.delete(EVERYTHING) == 0  # the write is done, not refused
    assert logged(caplog, "docs: not published to the readers: Qdrant at qdrant.test unavailable")
    outage.down = False
    follower = Follower(deployment.reader_store.system)
    assert follower.published("docs").version == (publisher.process, 0)  # the readers lag
    deployment.writer.delete(EVERYTHING)
    assert follower.published("docs").version == (publisher.process, 2)


def follow_threads() -> int:
    return sum(t.name == "rag-follow" for t in threading.enumerate())


def test_a_reader_looks_up_at_start_then_follows_the_writes_off_its_requests(
    tmp_path: Path, fast_renewal: None
) -> None:
    deployment = Deployment(tmp_path)
    writer, reader = deployment.writer, deployment.reader
    publisher = deployment.publishing()
    reader.follow = Follower(deployment.reader_store.system).published
    others = follow_threads()  # other tests' readers, in this process
    following = Following([reader])
    following.start()
    try:
        assert reader.renewed  # its requests read the last look-up
        assert reader.published == (publisher.process, 0)  # looked up before any request
        assert follow_threads() == others + 1
        writer.delete(EVERYTHING)
        # followed within the renewals (here 10 ms), not when the look-up would go stale (2 s)
        assert until(lambda: reader.published == (publisher.process, 1), within=1.0)
    finally:
        following.stop()
    assert not reader.renewed  # a stopped reader's requests look up for themselves
    assert follow_threads() == others
    writer.delete(EVERYTHING)
    time.sleep(0.05)
    assert reader.published == (publisher.process, 1)  # nothing renews it any more


def test_a_reader_keeps_its_last_look_up_while_qdrant_cannot_be_read(
    tmp_path: Path, fast_renewal: None, caplog: pytest.LogCaptureFixture
) -> None:
    deployment = Deployment(tmp_path)
    writer, reader = deployment.writer, deployment.reader
    publisher = deployment.publishing()
    docs, outage = deployment.outage()
    reader.follow = Follower(docs).published
    outage.down = True
    following = Following([reader])
    following.start()  # a reader that starts while Qdrant is down: starts all the same
    try:
        assert logged(caplog, "docs: not followed: Qdrant at qdrant.test unavailable")
        outage.down = False
        assert until(lambda: reader.published == (publisher.process, 0))
        outage.down = True
        caplog.clear()
        writer.delete(EVERYTHING)
        assert until(lambda: logged(caplog, "docs: not followed"))  # renewals go on failing
        assert reader.published == (publisher.process, 0)
        outage.down = False  # and go on: the reader catches up
        assert until(lambda: reader.published == (publisher.process, 1))
    finally:
        following.stop()


def test_a_reader_opened_and_closed_without_starting_stops_cleanly(tmp_path: Path) -> None:
    reader = Deployment(tmp_path).reader
    Following([reader]).stop()  # a command on a reader's hub: opened, never served
    assert not reader.renewed


@pytest.mark.slow
def test_a_reader_process_that_ends_without_stopping_its_renewal_still_exits() -> None:
    following = Following([])  # the same start in this process: mutmut maps what runs here
    following.start()
    following.stop()
    code = (
        "from rag_api.replicas.pointers import Following\n"
        "Following([]).start()\n"
        "print('following', flush=True)\n"
    )
    exits(code, "following")
