"""A readers-writer lock: searches share it, a document replacement holds it alone for its few ms;
and the names an operation holds alone (a migration, a drop of old versions, a restore)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Many readers or one writer; a waiting writer blocks new readers, so writes are not starved."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class Claims:
    """Names held alone: a second claim of a held name fails at once instead of waiting."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, name: str, refused: Callable[[], Exception]) -> Iterator[None]:
        """Hold `name` for the block; raise `refused()` when it is held already."""
        with self._lock:
            if name in self._held:
                raise refused()
            self._held.add(name)
        try:
            yield
        finally:
            with self._lock:
                self._held.discard(name)

    def held(self, name: str) -> bool:
        with self._lock:
            return name in self._held
