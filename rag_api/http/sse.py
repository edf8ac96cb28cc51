"""Server-sent events over HTTP: a streaming response that stops the answer when the client
leaves and keeps a quiet connection alive (the frames: rag_api.answering.frames)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Send

from rag_api.llm.pool import GenerationPool

KEEPALIVE = ": keep-alive\n\n"  # an SSE comment: clients skip it, proxies see bytes flow
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffering


class EventStream(StreamingResponse):
    """SSE from a sync generator read piece by piece in the generation pool's worker threads.

    However the response ends — finished, client disconnected (Starlette cancels the sending task),
    server shutting down — `stream_response` closes the generator and calls `on_close`, which
    closes the upstream LLM request. A piece being read when the client leaves is waited for
    (a worker thread cannot be interrupted), so the upstream stops within one piece.

    While no event comes for `keepalive_s` (a slow model's first token: the answer starts inside
    the first read), a `: keep-alive` comment goes out, so a proxy with a shorter idle timeout
    does not cut the stream.
    """

    keepalive_s = 15.0

    def __init__(
        self, events: Iterator[str], on_close: Callable[[], None], pool: GenerationPool
    ) -> None:
        body = kept_alive(pool.iterate(events), self.keepalive_s)
        super().__init__(body, media_type="text/event-stream", headers=HEADERS)
        self._events = events
        self._on_close = on_close

    async def stream_response(self, send: Send) -> None:
        try:
            await super().stream_response(send)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()
        self._on_close()


async def kept_alive(events: AsyncIterator[str], every: float) -> AsyncIterator[str]:
    """`events`, with KEEPALIVE after each `every` seconds spent waiting for the next one. A read
    in flight when the stream ends is waited for (its worker thread cannot be interrupted)
    before the caller closes the generator behind it."""
    pending: asyncio.Future[str] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({pending}, timeout=every)
            if not done:
                yield KEEPALIVE
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            finally:
                pending = None
            yield event
    finally:
        if pending is not None:  # not cancelled: the worker's read finishes (within one piece)
            with anyio.CancelScope(shield=True):
                await asyncio.wait({pending})
            with suppress(BaseException):
                pending.result()
