"""Recent query vectors, so one question is embedded once per model however many ask for it.

`auto` probes several collections at once and two of them may share a model (two e5
collections): the first probe embeds the question, the other waits for that vector instead of
computing it again. The voice pipeline also repeats a question (a search, then a context block).
A vector is keyed by the embedder's identity and the exact text it embedded (prefix included),
so a changed model or prefix never reuses one. Callers that wait share the first caller's error.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future

import numpy as np

CAPACITY = 512  # vectors kept (384 floats each: ~0.8 MB)


class QueryVectors:
    """A small LRU of query vectors; concurrent requests for one key compute it once."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, Future[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The vector for `key`: kept, being computed by another caller, or computed now."""
        with self._lock:
            entry = self._entries.get(key)
            owner = entry is None
            if entry is None:
                entry = self._entries[key] = Future()
                entry.set_running_or_notify_cancel()
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
        if not owner:
            return entry.result()
        try:
            vector = compute()
        except BaseException as exc:
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
            entry.set_exception(exc)
            raise
        entry.set_result(vector)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
