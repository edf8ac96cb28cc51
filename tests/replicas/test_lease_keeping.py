"""The writer's lease kept, lost and given back (rag_api.replicas.lease), on qdrant-client's
in-memory mode, with the clocks and the renewal interval driven (RENEW_S 10 ms, SETTLE_S 0): no
test waits for a lease's real seconds."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from qdrant_client import QdrantClient

from rag_api.errors import AnotherWriter
from rag_api.replicas import lease
from rag_api.replicas.lease import LEASE_S, WriterLease
from rag_api.store.remote import RemoteStore
from rag_api.store.system import SystemDocs
from tests.support.replicas import Clock, Outage, exits, logged, until


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease, "RENEW_S", 0.01)
    monkeypatch.setattr(lease, "SETTLE_S", 0.0)


@pytest.fixture
def client() -> QdrantClient:
    return QdrantClient(location=":memory:")


def docs_of(client: QdrantClient) -> SystemDocs:
    return RemoteStore.sharing(client, threading.RLock(), "memory").system


def lease_threads() -> int:
    return sum(t.name == "rag-writer-lease" for t in threading.enumerate())


def test_the_holder_renews_its_lease_in_a_thread_of_its_own_and_stops_at_release(
    client: QdrantClient,
) -> None:
    docs, clock = docs_of(client), Clock()
    others = lease_threads()  # other tests' writers, in this process
    held = WriterLease(docs, clock).take()
    try:
        assert docs.get("lease", "writer")["renewed"] == 1000.0
        assert lease_threads() == others + 1  # named for an operator's thread dump
        clock.now = 1000.0 + LEASE_S * 5  # long past a lease: still held, renewed meanwhile
        assert until(lambda: docs.get("lease", "writer")["renewed"] == clock.now)
        with pytest.raises(AnotherWriter):
            WriterLease(docs, clock).take()
    finally:
        held.release()
    assert lease_threads() == others  # stopped before the lease is given back: never put back
    time.sleep(0.05)
    assert docs.get("lease", "writer") is None


def test_a_second_writer_is_told_who_holds_the_lease_and_how_long_ago_it_was_renewed(
    client: QdrantClient,
) -> None:
    docs, clock = docs_of(client), Clock()
    first = WriterLease(docs, clock).take()
    first._stop.set()  # no renewal: the age below is the test's
    try:
        clock.now += 4
        with pytest.raises(AnotherWriter) as refused:
            WriterLease(docs, clock).take()
        said = refused.value.message
        assert f"({socket.gethostname()}, pid {os.getpid()}, renewed 4 s ago)" in said
        assert "RAG_ROLE=reader" in said and "lets go after 10 s" in said
    finally:
        first.release()


def test_a_lease_lapses_exactly_lease_s_after_its_last_renewal(client: QdrantClient) -> None:
    docs, clock = docs_of(client), Clock()
    dead = WriterLease(docs, clock).take()
    dead._stop.set()  # died: no renewal, no release
    clock.now += LEASE_S - 0.5
    with pytest.raises(AnotherWriter):
        WriterLease(docs, clock).take()
    clock.now += 0.5
    taken = WriterLease(docs, clock).take()
    assert taken.lapsed and docs.get("lease", "writer")["id"] == taken.holder["id"]
    taken.release()


def test_a_lease_written_without_a_renewal_time_counts_as_lapsed(client: QdrantClient) -> None:
    docs = docs_of(client)
    docs.put("lease", "writer", {"id": "an-older-hub", "host": "old", "pid": 1})
    taken = WriterLease(docs).take()
    assert taken.lapsed
    taken.release()


def test_two_writers_past_each_others_lease_say_so_and_the_stalled_one_never_takes_it_back(
    client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    docs, stalled_clock = docs_of(client), Clock()
    stalled = WriterLease(docs, stalled_clock).take()
    stalled._stop.set()  # stalled past its lease (a long pause)
    new = WriterLease(docs, Clock(1000.0 + LEASE_S + 1)).take()
    assert new.lapsed
    stalled._stop.clear()  # the stalled writer wakes up and renews again
    stalled._thread = threading.Thread(target=stalled._keep, name="rag-writer-lease", daemon=True)
    stalled._thread.start()
    try:
        said = "two writers on this deployment; stop one: another writer holds this deployment"
        assert until(lambda: logged(caplog, said))
        assert docs.get("lease", "writer")["id"] == new.holder["id"]
    finally:
        stalled.release()
        new.release()


def test_a_writer_that_starts_while_qdrant_is_down_takes_the_lease_when_it_answers(
    client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    outage = Outage()
    outage.down = True
    held = WriterLease(SystemDocs(client, outage)).take()  # starts all the same
    try:
        assert not held.lapsed  # nothing taken from a dead writer: nothing to recover
        said = "the writer's lease is taken when Qdrant answers: Qdrant at qdrant.test unavailable"
        assert logged(caplog, said)
        assert until(lambda: logged(caplog, "the writer's lease was not renewed: Qdrant at qdrant"))
        outage.down = False
        assert until(
            lambda: (docs_of(client).get("lease", "writer") or {}).get("id") == held.holder["id"]
        )
        with pytest.raises(AnotherWriter):
            WriterLease(docs_of(client)).take()
        outage.down = True
    finally:
        held.release()  # Qdrant down: not given back, it lapses
    assert logged(caplog, "the writer's lease was not given back (it lapses): Qdrant at qdrant")
    assert docs_of(client).get("lease", "writer")["id"] == held.holder["id"]


@pytest.mark.slow
def test_a_writer_process_that_ends_without_giving_the_lease_back_still_exits(
    client: QdrantClient,
) -> None:
    # the same start in this process first: mutmut maps a test only to the code it runs here
    WriterLease(docs_of(client)).take().release()
    code = (
        "import time\n"
        "from rag_api.replicas.lease import WriterLease\n"
        "from rag_api.store.remote import RemoteStore\n"
        "WriterLease(RemoteStore(':memory:').system).take()\n"
        "print('taken', flush=True)\n"
    )
    exits(code, "taken")


def test_a_lease_never_taken_gives_nothing_back(client: QdrantClient) -> None:
    docs = docs_of(client)
    holder = WriterLease(docs).take()
    try:
        WriterLease(docs).release()  # a hub that stops before it took the lease
        assert docs.get("lease", "writer")["id"] == holder.holder["id"]
    finally:
        holder.release()
