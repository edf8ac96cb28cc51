"""How fast a sync goes as it goes: chunks written a second, and what the embedding server
takes (its latency a request, the requests it had retried); `rag-hub index` shows it beside its
progress bar, a source sync's job in its progress (GET /v1/jobs)."""

from __future__ import annotations

import threading
import time
from typing import Any

from rag_api.embedding.embedders import Embedded


class Throughput:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.chunks = 0  # written
        self.embedded_chunks = 0
        self.embed_s = 0.0  # the embedding stage's time
        self.requests = 0  # to an embedding server
        self.retries = 0
        self.server_s = 0.0
        self._lock = threading.Lock()

    def embedded(self, done: Embedded, seconds: float) -> None:
        with self._lock:
            self.embedded_chunks += len(done.vectors)
            self.embed_s += seconds
            self.requests += done.requests
            self.retries += done.retries
            self.server_s += done.server_s

    def written(self, chunks: int) -> None:
        with self._lock:
            self.chunks += chunks

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / max(time.monotonic() - self.started, 1e-9)

    @property
    def latency_ms(self) -> float | None:
        """The embedding server's mean time a request, None without a server."""
        return 1000 * self.server_s / self.requests if self.requests else None

    def as_dict(self) -> dict[str, Any]:
        latency = self.latency_ms
        return {
            "chunks_per_s": round(self.chunks_per_s, 1),
            "embedding_latency_ms": None if latency is None else round(latency, 1),
            "embedding_retries": self.retries,
        }

    def line(self) -> str:
        """For a progress bar: '1,234 chunks/s, server 52 ms, 3 retries'."""
        parts = [f"{self.chunks_per_s:,.0f} chunks/s"]
        if self.latency_ms is not None:
            parts.append(f"server {self.latency_ms:.0f} ms")
        if self.retries:
            parts.append(f"{self.retries} retr{'y' if self.retries == 1 else 'ies'}")
        return ", ".join(parts)
