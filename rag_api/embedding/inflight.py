"""How many requests one embedding server gets at once: at most the configured `concurrency`,
halved when the server sheds load (a 429 or a 503) and raised by one after as many answers in a
row as the limit allows (additive increase, multiplicative decrease, as TCP does), so a
saturated server is not hammered and a recovered one is used fully again. A pause the server
asks for (`Retry-After`) holds every request to it, not only the one it answered.

Questions (`query=True`) do not wait for a slot behind the indexing batches: they are counted,
and their 429s lower the limit, but they go at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rag_api.observability.metrics import EMBEDDING_INFLIGHT


class Deadline(Exception):
    """No slot came free (or the server's pause did not end) before the batch's deadline."""


class InFlight:
    def __init__(self, ceiling: int, provider: str, model: str) -> None:
        self.ceiling = ceiling
        self.limit = ceiling
        self.active = 0
        self.peak = 0  # the most requests in flight at once so far
        self._successes = 0  # answers in a row since the limit last moved
        self._epoch = 0  # moves on each decrease: one overload wave halves the limit once
        self._paused_until = 0.0  # monotonic: the server asked for a pause until then
        self._cond = threading.Condition()
        self._gauge = EMBEDDING_INFLIGHT.labels(provider, model)

    @contextmanager
    def slot(self, deadline: float, *, query: bool = False) -> Iterator[int]:
        """A request in flight (yields the epoch it started in, for `shed`); waits for a free
        slot and for a pause the server asked, raises Deadline when they outlast `deadline`."""
        with self._cond:
            while True:
                now = time.monotonic()
                wait = self._paused_until - now
                if wait <= 0 and (query or self.active < self.limit):
                    break
                if now >= deadline or self._paused_until >= deadline:
                    raise Deadline()
                self._cond.wait(
                    min(deadline, self._paused_until) - now if wait > 0 else deadline - now
                )
            self.active += 1
            self.peak = max(self.peak, self.active)
            self._gauge.set(self.active)
            epoch = self._epoch
        try:
            yield epoch
        finally:
            with self._cond:
                self.active -= 1
                self._gauge.set(self.active)
                self._cond.notify_all()

    def served(self) -> None:
        """A request answered: after `limit` of them in a row the limit grows by one."""
        with self._cond:
            self._successes += 1
            if self._successes >= self.limit and self.limit < self.ceiling:
                self.limit += 1
                self._successes = 0
                self._cond.notify_all()

    def shed(self, epoch: int, pause_s: float | None) -> None:
        """The server turned a request away (429, 503): the limit halves, once for all the
        requests that were in flight together (`epoch`); a pause it asked for holds everyone."""
        with self._cond:
            self._successes = 0
            if epoch == self._epoch:
                self.limit = max(1, self.limit // 2)
                self._epoch += 1
            if pause_s:
                self._paused_until = max(self._paused_until, time.monotonic() + pause_s)
