"""POST /query/{collection} with `stream: true`: the same query, its answer sent as it is made.

Server-sent events, in order: `sources` (the passages the answer is grounded in, with their
fused, dense and sparse scores and ranks, before any text; from `auto`, also `routing`), `delta` (`{"text"}`, one per piece
of the answer as the generator produces it), then `done` (`generator`, `model`, `usage`,
`timings_ms`, `warning` when there is one). `generator: "none"` is the fixed no-evidence answer.
The retrieval is the one the plain request makes (mode, top_k, threshold, filters, sources), so
the passages shown are exactly those the answer used. The console's Ask page reads this.
Retrieval runs before the response starts (its errors are the request's status); the answer
starts with the first event, so the response is under way (keep-alive comments, rag_api.http.sse)
while the LLM's first token is awaited.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from rag_api.answering.answer import AnswerStream, answer
from rag_api.answering.frames import frame
from rag_api.answering.models import QueryBody
from rag_api.answering.query import find
from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.observability.metrics import observe_stages


class QueryEvents:
    """Retrieval done and the answer started (in a generation worker); iterate for SSE frames."""

    def __init__(self, hub: Catalog, collection: str, body: QueryBody) -> None:
        self.started = time.perf_counter()
        found = find(hub, collection, body)  # a named collection, or where `auto` routes it
        self.timings: dict[str, float] = found.timings_ms
        self.head = found.head()
        self.answering = found.answering.name  # the named collection, or the one auto chose
        self.warning = found.warning
        self.answer: AnswerStream | None = None
        self.passages = found.passages
        self.start: Callable[[], AnswerStream] | None = None
        if body.generate:
            self.start = partial(
                answer,
                hub.generators,
                found.answering,
                body.query,
                found.passages,
                language=found.routed_language,
            )

    def __iter__(self) -> Iterator[str]:
        if self.start is not None:
            self.generation_started = time.perf_counter()
            self.answer = self.start()  # waits for the first token
            self.passages = self.answer.passages
        sources = [p.as_dict() for p in self.passages]
        done: dict[str, Any] = {"generator": None, "model": None, "usage": None}
        if self.answer is not None:
            done = {"generator": self.answer.generator, "model": self.answer.model}
        yield frame({**self.head, **done, "sources": sources}, event="sources")
        if self.answer is not None:
            try:
                for piece in self.answer:
                    yield frame({"text": piece}, event="delta")
            except RagError as exc:  # the status line is sent: the error is an event
                yield frame({"code": exc.code, "message": exc.message}, event="error")
                return
            self.timings["generate"] = _ms_since(self.generation_started)
            observe_stages(self.answering, {"generate": self.timings["generate"]})
            done["usage"] = self.answer.usage.as_dict()
            self.warning = self.answer.warning or self.warning
        self.timings["total"] = _ms_since(self.started)
        yield frame(
            {
                **done,
                "timings_ms": self.timings,
                **({"warning": self.warning} if self.warning else {}),
            },
            event="done",
        )

    def close(self) -> None:
        """The client went away: stop the upstream generation."""
        if self.answer is not None:
            self.answer.close()


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
