"""Stored responses of a deployment of replicas: in Qdrant's system collection, so that a
follow-up (`previous_response_id`) may reach any reader. The same bounds as the files of one
node (rag_api.openai_compat.stored): expired ones are dropped by one filtered delete, and the count
is brought back under RAG_RESPONSES_MAX, at most once every SWEEP_S, never a scan a save."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from rag_api.openai_compat.stored import ResponseStore, StoredResponse
from rag_api.store.system import SystemDocs

KIND = "response"
SWEEP_S = 60.0


class SharedResponses(ResponseStore):
    def __init__(
        self,
        docs: SystemDocs,
        folder: Path,
        ttl_s: float,
        max_count: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(folder, ttl_s, max_count, clock)  # the folder stays unused
        self.docs = docs
        self._swept = 0.0
        self._sweeping = threading.Lock()

    def save(self, stored: StoredResponse) -> None:
        self.docs.put(KIND, stored.response["id"], asdict(stored), at=stored.created_at)
        if time.monotonic() - self._swept > SWEEP_S and self._sweeping.acquire(blocking=False):
            try:
                self._swept = time.monotonic()
                self.sweep()
            finally:
                self._sweeping.release()

    def sweep(self) -> None:
        """Drop the expired responses, then the oldest beyond the count."""
        self.docs.drop_before(KIND, self.clock() - self.ttl_s)
        excess = self.docs.count(KIND) - self.max_count
        if excess > 0:
            oldest = sorted(self.docs.times(KIND), key=lambda kept: kept[1])[:excess]
            self.docs.delete(KIND, *(key for key, _ in oldest))

    def _load(self, response_id: str) -> StoredResponse | None:
        document = self.docs.get(KIND, response_id)
        return StoredResponse(**document) if document is not None else None

    def _forget(self, response_id: str) -> None:
        self.docs.delete(KIND, response_id)
