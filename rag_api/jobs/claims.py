"""Work that one holder at a time may do: a migration of a collection (or a drop of its old
versions, a restore into it); a second one is refused at once, never queued."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rag_api.errors import RagError


class Claims:
    """The keys held now in this hub ("migrate:docs"); every method may be called from any thread."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, key: str, refusal: Callable[[], RagError]) -> Iterator[None]:
        """Hold `key` for the block; the error `refusal` makes when it is held already."""
        with self._lock:
            if key in self._held:
                raise refusal()
            self._held.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._held.discard(key)

    def held(self, key: str) -> bool:
        with self._lock:
            return key in self._held
