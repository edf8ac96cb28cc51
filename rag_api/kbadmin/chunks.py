"""Chunks as the admin API shows them, and finding one by `index` or by (source, chunk_index)."""

from __future__ import annotations

from typing import Any

from rag_api.errors import AmbiguousSource, ChunkNotFound
from rag_api.payload import FROM_API, StoredChunk, chunk_ref, point_id
from rag_api.points.collection import Collection
from rag_api.search.passage import Passage
from rag_api.store import Record, Selector

DYNAMIC_BASE = 1_000_000  # API chunks are numbered DYNAMIC_BASE + index: never a file position
API_CHUNKS = Selector(origin=FROM_API)
TEMPORARY = Selector(origin=FROM_API, persist=False)  # gone at the next restart or /reload


def chunk_view(
    collection: str, stored: StoredChunk, score: float | None, include_text: bool
) -> dict[str, Any]:
    """A listing item: `id` is the chunk's id everywhere, `index` its stable number in the
    collection (what /chunks/update accepts)."""
    view: dict[str, Any] = {
        "id": chunk_ref(collection, stored.source, stored.chunk_index or 0),
        "index": stored.seq,
        "source": stored.source,
        "chunk_index": stored.chunk_index or 0,
        "score": None if score is None else round(score, 3),
        "metadata": stored.metadata,
        **({"url": stored.url} if stored.url else {}),
        **stored.labels(),  # type, quality, quality_reasons (none: not labelled)
        "is_dynamic": stored.dynamic,
        "origin": stored.origin,
        "persist": stored.persist,
    }
    if include_text:
        view["text"] = stored.text
    return view


def shown_score(passage: Passage) -> float:
    """The score the pipeline sees: cosine similarity (its thresholds are cosine); BM25 in sparse mode."""
    return passage.dense_score if passage.dense_score is not None else passage.score


def result_view(passage: Passage) -> dict[str, Any]:
    """A /search or /context result."""
    return {
        **({"id": passage.ref} if passage.ref else {}),
        "text": passage.text,
        "source": passage.source,
        "score": round(shown_score(passage), 3),
        "chunk_index": passage.chunk_index,
        "metadata": passage.metadata,
        **({"url": passage.stored.url} if passage.stored.url else {}),
        **passage.stored.labels(),
        **({"collection": passage.collection} if passage.collection is not None else {}),
    }


def find_chunk(
    collection: Collection,
    index: int | None,
    source: str | None,
    chunk_index: int | None,
) -> Record:
    """The one chunk an update names; 404 CHUNK_NOT_FOUND, or 409 AMBIGUOUS_SOURCE for a bare
    source with several chunks."""
    if index is not None:
        records = collection.records(Selector(seq=index), limit=2)
        records = [r for r in records if source is None or StoredChunk(r.payload).source == source]
        if len(records) > 1:  # two processes wrote the collection: see rag_api.points.sequence
            raise AmbiguousSource(
                f"index {index} names {len(records)} chunks; use source + chunk_index"
            )
        where = f"index {index}" + (f" in source '{source}'" if source is not None else "")
    elif chunk_index is not None:
        assert source is not None
        records = collection.retrieve([point_id(collection.name, source, chunk_index)])
        where = f"source '{source}', chunk_index {chunk_index}"
    else:
        assert source is not None
        selector = Selector(sources=(source,))
        records = collection.records(selector, limit=2)
        if len(records) > 1:
            count = collection.count(selector)
            raise AmbiguousSource(
                f"source '{source}' has {count} chunks: add chunk_index, or use index from a listing"
            )
        where = f"source '{source}'"
    if not records:
        raise ChunkNotFound(f"no chunk with {where} in collection '{collection.name}'")
    return records[0]
