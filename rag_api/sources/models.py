"""What the sources' route answers (GET /v1/collections/{c}/sources)."""

from __future__ import annotations

from typing import Any

from rag_api.schema import Answer


class SourceStatus(Answer):
    name: str
    kind: str  # web, s3, git, or a plugin's
    every_s: float | None  # its schedule; null: only on demand
    documents: int  # the collection holds this many of its documents
    chunks: int
    last: dict[str, Any] | None  # the last sync: at, status, its counts (or its error)
    last_ok_at: str | None  # when a sync last ended well (ISO 8601)
    failures: int  # syncs failed in a row (its chunks are kept meanwhile)
    next_at: str | None  # when the next scheduled sync is due
    job: str | None  # the id of its sync job waiting or running


class SourcesStatus(Answer):
    collection: str
    sources: list[SourceStatus]
