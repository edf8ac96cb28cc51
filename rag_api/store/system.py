"""The hub's own documents in a Qdrant deployment: what replicas share beside the points (scoped
keys, stored responses, each collection's published version, the writer's lease), as payload-only
points of one collection, `rag_hub_system` (docs/scaling.md). A document is JSON under a kind and a
key; the point's id is derived from both, so a put replaces it whole in one operation."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as m

COLLECTION = "rag_hub_system"
_NAMESPACE = uuid.UUID("6f1d8f4e-2c0b-4d57-9a57-2f7e1b0c9a11")
_PAGE = 256


def _id(kind: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{kind}\x00{key}"))


def _of_kind(kind: str, before: float | None = None) -> m.Filter:
    must: list[Any] = [m.FieldCondition(key="kind", match=m.MatchValue(value=kind))]
    if before is not None:
        must.append(m.FieldCondition(key="at", range=m.Range(lt=before)))
    return m.Filter(must=must)


class SystemDocs:
    """Documents by (kind, key) in the system collection, created on first use. `call` runs a
    client call the way the store does (its guard, its error)."""

    def __init__(self, client: QdrantClient, call: Callable[..., Any]) -> None:
        self._client = client
        self._call = call
        self._ready = False

    def _ensure(self) -> None:
        if self._ready:
            return
        if not self._call(self._client.collection_exists, COLLECTION):
            try:
                self._call(self._client.create_collection, COLLECTION, vectors_config={})
            except Exception:  # another replica created it meanwhile
                if not self._call(self._client.collection_exists, COLLECTION):
                    raise
            self._call(
                self._client.create_payload_index, COLLECTION, "kind", m.PayloadSchemaType.KEYWORD
            )
        self._ready = True

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        self._ensure()
        records = self._call(self._client.retrieve, COLLECTION, [_id(kind, key)], with_payload=True)
        return json.loads(records[0].payload["doc"]) if records and records[0].payload else None

    def put(self, kind: str, key: str, doc: dict[str, Any], at: float | None = None) -> None:
        """Write the document whole; `at` (default now) is its time, for `drop_before`."""
        self._ensure()
        payload = {"kind": kind, "key": key, "at": time.time() if at is None else at}
        payload["doc"] = json.dumps(doc, ensure_ascii=False)
        point = m.PointStruct(id=_id(kind, key), vector={}, payload=payload)
        self._call(self._client.upsert, COLLECTION, [point], wait=True)

    def delete(self, kind: str, *keys: str) -> None:
        self._ensure()
        selector = m.PointIdsList(points=[_id(kind, key) for key in keys])
        self._call(self._client.delete, COLLECTION, selector, wait=True)

    def times(self, kind: str) -> Iterator[tuple[str, float]]:
        """(key, time) of every document of a kind, in no order."""
        self._ensure()
        offset = None
        while True:
            records, offset = self._call(
                self._client.scroll,
                COLLECTION,
                scroll_filter=_of_kind(kind),
                limit=_PAGE,
                offset=offset,
                with_payload=["key", "at"],
            )
            for record in records:
                yield record.payload["key"], float(record.payload["at"])
            if offset is None:
                return

    def count(self, kind: str) -> int:
        self._ensure()
        return self._call(self._client.count, COLLECTION, count_filter=_of_kind(kind)).count

    def drop_before(self, kind: str, before: float) -> None:
        """Delete the documents of a kind whose time is older than `before`."""
        self._ensure()
        selector = m.FilterSelector(filter=_of_kind(kind, before))
        self._call(self._client.delete, COLLECTION, selector, wait=True)
