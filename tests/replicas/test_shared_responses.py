"""Stored responses of replicas in Qdrant's system collection (qdrant-client's in-memory mode):
a save sweeps the expired and the excess, at most once every SWEEP_S (driven here by a clock of
the test's, not by waiting)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from rag_api.openai_compat.stored import StoredResponse
from rag_api.replicas import shared_responses
from rag_api.replicas.shared_responses import KIND, SWEEP_S, SharedResponses
from rag_api.store.remote import RemoteStore


def test_a_save_sweeps_the_expired_and_the_excess_at_most_once_a_sweep_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now, ticks = [1_000_000.0], [5_000.0]  # the responses' clock, and the sweep's (monotonic)
    monkeypatch.setattr(shared_responses, "time", SimpleNamespace(monotonic=lambda: ticks[0]))
    docs = RemoteStore(":memory:").system
    store = SharedResponses(docs, tmp_path, ttl_s=100, max_count=2, clock=lambda: now[0])

    def save(n: int) -> str:
        response_id = f"resp_{99 - n:032x}"  # later ones sort first: the oldest is found by time
        store.save(StoredResponse("docs", now[0], {"id": response_id, "output": []}, []))
        return response_id

    def kept() -> set[str]:
        return {key for key, _ in docs.times(KIND)}

    first = save(1)
    now[0] += 150  # `first` has expired
    ticks[0] += SWEEP_S
    second = save(2)  # exactly the sweep interval after the first save's sweep: not past it
    assert kept() == {first, second}
    now[0] += 1
    ticks[0] += SWEEP_S
    third = save(3)  # past it: the expired one goes
    assert kept() == {second, third}
    now[0] += 10
    ticks[0] += SWEEP_S + 1
    fourth = save(4)  # over the count: the oldest goes
    assert kept() == {third, fourth}


def test_an_expired_response_goes_though_the_count_has_room(tmp_path: Path) -> None:
    """Expiry is by the time the response was created (the store's clock), not the save's."""
    now = [1_000_000.0]  # far from time.time(): a save timed by the wall clock would never expire
    docs = RemoteStore(":memory:").system
    store = SharedResponses(docs, tmp_path, ttl_s=100, max_count=10, clock=lambda: now[0])
    store.save(StoredResponse("docs", now[0], {"id": "resp_old", "output": []}, []))
    now[0] += 150
    store.sweep()
    assert {key for key, _ in docs.times(KIND)} == set()


def test_a_save_does_not_wait_for_a_sweep_under_way(tmp_path: Path) -> None:
    """Another save's sweep holds the sweep: this save skips it rather than queue behind it."""
    docs = RemoteStore(":memory:").system
    store = SharedResponses(docs, tmp_path, ttl_s=100, max_count=10)
    with store._sweeping:  # a sweep under way in another request
        saving = threading.Thread(
            target=store.save,
            args=(StoredResponse("docs", 1.0, {"id": "resp_new", "output": []}, []),),
        )
        saving.start()
        saving.join(timeout=5)
        assert not saving.is_alive(), "the save waited for the sweep"
    assert {key for key, _ in docs.times(KIND)} == {"resp_new"}
