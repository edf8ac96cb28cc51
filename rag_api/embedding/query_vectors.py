"""Recent query vectors, so one question is embedded once per model however many ask for it.

`auto` probes several collections at once and two of them may share a model (two e5
collections): the first probe embeds the question, the other waits for that vector instead of
computing it again. The voice pipeline also repeats a question (a search, then a context block).
A vector is keyed by the embedder's identity and the exact text it embedded (prefix included),
so a changed model or prefix never reuses one. Callers that wait share the first caller's error.
The sentences an extractive answer scores by meaning are kept the same way, in an LRU of their
own: questions about one topic retrieve the same passages again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future

import numpy as np

CAPACITY = 512  # vectors kept (384 floats each: ~0.8 MB)


class QueryVectors:
    """A small LRU of vectors (questions; also the sentences extractive answers score by
    meaning); concurrent requests for one key compute it once."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, Future[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The vector for `key`: kept, being computed by another caller, or computed now."""
        return self.get_many([key], lambda _: [compute()])[0]

    def get_many(
        self, keys: Sequence[Hashable], compute: Callable[[list[Hashable]], Sequence[np.ndarray]]
    ) -> list[np.ndarray]:
        """The vectors for `keys`: those kept or being computed are waited for, the others
        computed now, in one call (`compute(missing)`: a vector each, in their order)."""
        entries: list[Future[np.ndarray]] = []
        missing: dict[Hashable, Future[np.ndarray]] = {}
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is None:
                    entry = self._entries[key] = missing[key] = Future()
                    entry.set_running_or_notify_cancel()
                else:
                    self._entries.move_to_end(key)
                entries.append(entry)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        if missing:
            try:
                vectors = list(compute(list(missing)))
                if len(vectors) != len(missing):
                    raise ValueError(f"{len(vectors)} vectors for {len(missing)} texts")
            except BaseException as exc:
                with self._lock:
                    for key, entry in missing.items():
                        if self._entries.get(key) is entry:
                            del self._entries[key]
                for entry in missing.values():
                    entry.set_exception(exc)
                raise
            for entry, vector in zip(missing.values(), vectors, strict=True):
                entry.set_result(vector)
        return [entry.result() for entry in entries]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
