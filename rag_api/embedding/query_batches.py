"""Questions that arrive together are embedded together (docs/architecture.md, "Query batches").

No timer: a question that finds the model idle is embedded at once, alone, on its caller's
thread. Questions that arrive while the model is busy queue; when the running call ends, the
oldest of them leads the next call on its own thread with everything queued (at most `size`
questions), and so on. A lone caller never waits; four callers at once pay one call for the
three that queued behind the first. A failed call fails no question that would have succeeded
alone: its questions are embedded again one by one, each with its own outcome, unless the
upstream cannot be reached at all (then every one of them would have failed the same way).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np

from rag_api.observability.metrics import QUERY_BATCH


@dataclass(eq=False)
class _Question:
    text: str
    done: threading.Event = field(default_factory=threading.Event)
    batch: list[_Question] | None = None  # the call this question runs (then it leads)
    vector: np.ndarray | None = None
    error: BaseException | None = None

    def answer(self) -> np.ndarray:
        if self.error is not None:
            raise self.error
        assert self.vector is not None
        return self.vector


class QueryBatches:
    """One model's question queue. `embed` takes a list of texts and returns one row each."""

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray], size: int) -> None:
        self._embed = embed
        self.size = size
        self._lock = threading.Lock()
        self._queue: deque[_Question] = deque()
        self._running = False  # a call is running: a question queues

    @property
    def waiting(self) -> int:
        """Questions queued for the next call."""
        return len(self._queue)

    def embed(self, text: str) -> np.ndarray:
        """The vector of one question, embedded with those that queued beside it."""
        mine = _Question(text)
        with self._lock:
            self._queue.append(mine)
            if not self._running:
                self._running = True
                mine.batch = self._take()
        if mine.batch is None:
            mine.done.wait()  # answered, or handed the next call (`batch`)
        if mine.batch is not None:
            self._lead(mine.batch)
        return mine.answer()

    def _take(self) -> list[_Question]:
        """The oldest queued questions, at most `size` (under the lock)."""
        return [self._queue.popleft() for _ in range(min(self.size, len(self._queue)))]

    def _lead(self, batch: list[_Question]) -> None:
        """Run one call, then hand the next call to the oldest question waiting."""
        try:
            self._run(batch)
        finally:
            with self._lock:
                following = self._queue[0] if self._queue else None
                if following is None:
                    self._running = False
                else:
                    following.batch = self._take()  # the oldest leads its own call
            if following is not None:
                following.done.set()

    def _run(self, batch: list[_Question]) -> None:
        QUERY_BATCH.observe(len(batch))
        try:
            rows = self._embed([q.text for q in batch])
        except BaseException as exc:
            if len(batch) == 1 or unreachable(exc) or not isinstance(exc, Exception):
                for question in batch:
                    question.error = exc
            else:  # one question may have failed the call: each alone, as it would have been
                for question in batch:
                    self._run([question])
        else:
            for question, row in zip(batch, rows, strict=True):
                question.vector = row
        for question in batch:
            question.done.set()


def unreachable(exc: BaseException) -> bool:
    """The upstream could not be reached or did not answer in time: no question would get
    through alone either."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (httpx.TransportError, ConnectionError, TimeoutError)):
            return True
        cause = cause.__cause__
    return False
