"""The rules of retrying an embedding server and of its requests in flight, exactly: the backoff
schedule and its jitter, the pause a server asks for, and the AIMD limit (one halving a wave of
429s, growth after a run of successes). The behaviour against a real server is in
test_embedding_server.py; these pin the numbers it rests on."""

from __future__ import annotations

import random
import time
from email.utils import formatdate

import httpx
import pytest

from rag_api.embedding.inflight import InFlight
from rag_api.embedding.retries import MAX_PAUSE_S, asked_pause_s, pause_s


class _Edge(random.Random):
    """uniform() at one end of its range: 0.0 the lowest, 1.0 the highest."""

    def __init__(self, at: float) -> None:
        super().__init__(0)
        self.at = at

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.at


@pytest.mark.parametrize(
    ("attempt", "ceiling"), [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (9, MAX_PAUSE_S)]
)
def test_the_backoff_doubles_to_its_ceiling_half_of_it_random(attempt, ceiling) -> None:
    assert pause_s(attempt, None, _Edge(0.0)) == pytest.approx(ceiling / 2)
    assert pause_s(attempt, None, _Edge(1.0)) == pytest.approx(ceiling)


def test_a_pause_the_server_asks_is_the_least_waited_with_a_tenth_of_jitter() -> None:
    assert pause_s(1, 3.0, _Edge(0.0)) == pytest.approx(3.0)
    assert pause_s(1, 3.0, _Edge(1.0)) == pytest.approx(3.3)
    assert pause_s(5, 1.0, _Edge(1.0)) == pytest.approx(8.0)  # the backoff when it is longer


def _answer(**headers: str) -> httpx.Response:
    return httpx.Response(429, headers=headers)


def test_the_pause_asked_in_each_header_form() -> None:
    assert asked_pause_s(_answer()) is None
    assert asked_pause_s(_answer(**{"retry-after": "2"})) == 2.0
    assert asked_pause_s(_answer(**{"retry-after": "2", "retry-after-ms": "250"})) == 0.25
    assert asked_pause_s(_answer(**{"retry-after": "-5"})) == 0.0
    assert asked_pause_s(_answer(**{"retry-after": "soon"})) is None
    now = time.time()
    dated = _answer(**{"retry-after": formatdate(now + 30, usegmt=True)})
    assert asked_pause_s(dated) == pytest.approx(30, abs=2)  # against the clock
    assert asked_pause_s(dated, now=now - 100) == pytest.approx(130, abs=1)  # against `now`
    past = _answer(**{"retry-after": formatdate(now - 30, usegmt=True)})
    assert asked_pause_s(past, now=now) == 0.0
    assert asked_pause_s(_answer(**{"retry-after-ms": "x", "retry-after": "4"})) == 4.0


def test_one_wave_of_sheds_halves_the_limit_once_and_successes_raise_it_again() -> None:
    limiter = InFlight(8, "test", "retries")
    with limiter.slot(time.monotonic() + 1) as first, limiter.slot(time.monotonic() + 1) as second:
        assert first == second  # in flight together: one wave
        limiter.shed(first, None)
        limiter.shed(second, None)
    assert limiter.limit == 4
    with limiter.slot(time.monotonic() + 1) as third, limiter.slot(time.monotonic() + 1) as fourth:
        limiter.shed(third, None)  # a new wave: halved once more, once
        limiter.shed(fourth, None)
    assert limiter.limit == 2
    limiter.served()
    assert limiter.limit == 2  # the shed started the run of answers again
    limiter.served()
    assert limiter.limit == 3  # after `limit` answers in a row
    limiter.served()
    limiter.served()
    assert limiter.limit == 3
    limiter.served()
    assert limiter.limit == 4


def test_a_shed_starts_the_run_of_successes_again_and_the_limit_never_falls_below_one() -> None:
    limiter = InFlight(2, "test", "retries")
    limiter.served()
    with limiter.slot(time.monotonic() + 1) as epoch:
        limiter.shed(epoch, None)
    assert limiter.limit == 1
    with limiter.slot(time.monotonic() + 1) as epoch:
        limiter.shed(epoch, None)
    assert limiter.limit == 1
    limiter.served()
    assert limiter.limit == 2  # one answer after the shed: the run began with it
