"""The writer's lease in Qdrant's system collection (qdrant-client's in-memory mode)."""

from __future__ import annotations

import time

import pytest

from rag_api.errors import AnotherWriter
from rag_api.replicas.lease import LEASE_S, WriterLease
from rag_api.store.remote import RemoteStore


def test_a_held_lease_refuses_a_second_writer_until_it_is_given_back_or_lapses() -> None:
    docs = RemoteStore(":memory:").system
    first = WriterLease(docs).take()
    assert not first.lapsed
    with pytest.raises(AnotherWriter, match=r"pid \d+"):
        WriterLease(docs).take()
    first.release()  # a clean stop: the next writer starts at once
    second = WriterLease(docs).take()
    assert not second.lapsed  # given back: nothing was cut short
    second._stop.set()  # dies: no renewal, no release
    with pytest.raises(AnotherWriter):
        WriterLease(docs).take()
    later = WriterLease(docs, clock=lambda: time.time() + LEASE_S + 1).take()
    assert docs.get("lease", "writer")["id"] == later.holder["id"]
    assert later.lapsed  # its start completes the torn replacements the dead writer left
    later.release()


def test_a_writer_that_lost_its_lease_does_not_give_back_the_new_writers_at_its_stop() -> None:
    docs = RemoteStore(":memory:").system
    old = WriterLease(docs).take()
    old._stop.set()  # stalled past the lease's time (a long pause, a cut network): not renewed
    new = WriterLease(docs, clock=lambda: time.time() + LEASE_S + 1).take()
    assert new.lapsed
    old.release()  # the stalled writer stops at last
    assert docs.get("lease", "writer")["id"] == new.holder["id"]  # the new writer's, still held
    with pytest.raises(AnotherWriter):
        WriterLease(docs).take()  # a third writer is refused beside the new one
    new.release()
    assert docs.get("lease", "writer") is None
