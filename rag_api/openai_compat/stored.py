"""Stored responses: what `POST /v1/responses` keeps (`store`, true by default as on OpenAI) for
`previous_response_id` and `GET` / `DELETE /v1/responses/{id}`.

One JSON file per response in RAG_DATA_DIR/responses, written atomically, so they survive a
restart. Bounded by age (RAG_RESPONSES_TTL seconds; 0 keeps none) and count
(RAG_RESPONSES_MAX: the oldest go first): each save sweeps the expired and the excess from disk,
oldest first, from an index of ids and times read from the folder once (never a scan a save). A response belongs to the collection that answered it:
a key that may not read that collection finds it as it finds an unknown id (404).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_api.access.grant import allowed
from rag_api.atomic import write_atomically
from rag_api.errors import RagError

RESPONSE_ID = re.compile(r"resp_[0-9a-f]{32}")


class ResponseNotFound(RagError):
    code = "RESPONSE_NOT_FOUND"
    status = 404


@dataclass(frozen=True)
class StoredResponse:
    collection: str  # who may read it: the keys that may read this collection
    created_at: float
    response: dict[str, Any]  # as it was answered
    items: list[Any]  # the conversation as Responses items, this response's output included


class ResponseStore:
    def __init__(
        self, folder: Path, ttl_s: float, max_count: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.folder = folder
        self.ttl_s = ttl_s
        self.max_count = max_count
        self.clock = clock
        self._lock = threading.Lock()
        self._index: dict[str, float] | None = None  # id -> created_at, oldest first

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def keeper(self, collection: str, items: list[Any]) -> Callable[[dict[str, Any]], None]:
        """What keeps a finished response answered from `collection` after `items`."""

        def keep(response: dict[str, Any]) -> None:
            self.save(
                StoredResponse(collection, self.clock(), response, items + response["output"])
            )

        return keep

    def save(self, stored: StoredResponse) -> None:
        """Keep `stored`, then drop the expired responses and the oldest beyond the count."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{stored.response['id']}.json"
        write_atomically(path, json.dumps(asdict(stored), ensure_ascii=False), durable=False)
        os.utime(path, (stored.created_at, stored.created_at))  # its age, read after a restart
        with self._lock:
            index = self._known()
            index.pop(stored.response["id"], None)
            index[stored.response["id"]] = stored.created_at
            self._sweep(index)

    def find(self, response_id: str, param: str = "response_id") -> StoredResponse:
        """The stored response, or ResponseNotFound naming `param`: unknown, expired, or of a
        collection the request's key may not read."""
        stored = self._read(response_id)
        if stored is None or not allowed(stored.collection, "read"):
            raise ResponseNotFound(
                f"Response with id '{response_id}' not found (responses are kept "
                f"{self.ttl_s:.0f} s, and only with store: true)",
                param=param,
            )
        return stored

    def delete(self, response_id: str) -> StoredResponse:
        """Forget a response and return it (ResponseNotFound as `find`)."""
        stored = self.find(response_id)
        self._forget(response_id)
        return stored

    def _read(self, response_id: str) -> StoredResponse | None:
        if not RESPONSE_ID.fullmatch(response_id):
            return None
        stored = self._load(response_id)
        if stored is not None and stored.created_at + self.ttl_s < self.clock():
            self._forget(response_id)
            return None
        return stored

    def _load(self, response_id: str) -> StoredResponse | None:
        """The response as kept (expired or not), or None."""
        path = self.folder / f"{response_id}.json"
        try:
            return StoredResponse(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):  # absent, or not one the hub wrote
            return None

    def _forget(self, response_id: str) -> None:
        with self._lock:
            self._known().pop(response_id, None)
            (self.folder / f"{response_id}.json").unlink(missing_ok=True)

    def _known(self) -> dict[str, float]:
        """The stored ids and their times, oldest first: read from the folder at the first use,
        then kept by this store's saves and deletes (call with the lock held)."""
        if self._index is None:
            found = []
            for path in self.folder.glob("resp_*.json") if self.folder.is_dir() else ():
                try:
                    found.append((path.stat().st_mtime, path.stem))
                except FileNotFoundError:  # removed meanwhile
                    continue
            self._index = {response_id: at for at, response_id in sorted(found)}
        return self._index

    def _sweep(self, index: dict[str, float]) -> None:
        """Remove the expired responses and the oldest beyond the count, from the index and disk."""
        expired = self.clock() - self.ttl_s
        while index:
            oldest, at = next(iter(index.items()))
            if len(index) <= self.max_count and at >= expired:
                return
            del index[oldest]
            (self.folder / f"{oldest}.json").unlink(missing_ok=True)
