"""Generation off the request threads: at most RAG_MAX_GENERATIONS threads wait on LLMs at once.

Blocking LLM work (retrieve-then-answer, reading the next streamed piece) runs in worker threads
of this pool's own limit, not the threadpool that sync routes share: requests beyond the limit
wait their turn in the event loop, holding no thread, so /health, /ready and retrieval-only calls
never queue behind generation however slow the LLM is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import anyio

T = TypeVar("T")
_END = object()


class GenerationPool:
    """Create inside the event loop that uses it (the app's lifespan)."""

    def __init__(self, size: int) -> None:
        self._limiter = anyio.CapacityLimiter(size)

    async def run(self, work: Callable[..., T], *args: object) -> T:
        """`work(*args)` in a worker thread once a generation slot is free."""
        return await anyio.to_thread.run_sync(work, *args, limiter=self._limiter)

    async def iterate(self, pieces: Iterator[T]) -> AsyncIterator[T]:
        """`pieces` read one by one in worker threads, each read holding a slot."""
        while True:
            piece = await anyio.to_thread.run_sync(next, pieces, _END, limiter=self._limiter)
            if piece is _END:
                return
            yield piece  # type: ignore[misc]
