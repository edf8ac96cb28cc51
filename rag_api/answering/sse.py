"""Server-sent events: framing, and a streaming response that stops the answer when the client leaves."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Send

from rag_api.llm.pool import GenerationPool

DONE = "data: [DONE]\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffering


def frame(data: dict[str, Any], event: str | None = None) -> str:
    """One SSE event: an optional `event:` line, then the JSON on one `data:` line."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


class EventStream(StreamingResponse):
    """SSE from a sync generator read piece by piece in the generation pool's worker threads.

    However the response ends — finished, client disconnected (Starlette cancels the sending task),
    server shutting down — `stream_response` closes the generator and calls `on_close`, which
    closes the upstream LLM request. A piece being read when the client leaves is waited for
    (a worker thread cannot be interrupted), so the upstream stops within one piece.
    """

    def __init__(
        self, events: Iterator[str], on_close: Callable[[], None], pool: GenerationPool
    ) -> None:
        super().__init__(pool.iterate(events), media_type="text/event-stream", headers=HEADERS)
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
