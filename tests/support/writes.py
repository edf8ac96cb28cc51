"""A document written straight through the ingest path, as the admin API and the folder sync do,
for tests that need API-origin chunks without an HTTP server."""

from __future__ import annotations

from typing import Any

from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, WriteStats, write_documents
from rag_api.points.collection import Collection
from rag_api.store import Selector


def replace_source(
    collection: Collection,
    source: str,
    chunks: list[Chunk],
    provenance: dict[str, Any],
) -> WriteStats:
    """Atomically make `source` consist of exactly `chunks` (none: the source is deleted)."""
    write = DocumentWrite(collection, Selector(sources=(source,)), chunks, provenance)
    return write_documents(collection, [write])
