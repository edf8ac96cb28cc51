"""Reads of a collection for the pipeline: status, sources, chunk listings, search, context block.

Listings, like searches, read under the collection's points lock (rag_api.points.collection), so they
never catch a document replacement half-way.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from rag_api.catalog import Catalog
from rag_api.indexing import kb
from rag_api.kbadmin.chunks import API_CHUNKS, TEMPORARY, chunk_view, result_view, shown_score
from rag_api.kbadmin.models import (
    ChunkFilters,
    ChunkPage,
    Context,
    ContextBlock,
    Search,
    SearchResults,
    SourceList,
    Status,
)
from rag_api.llm.prompts import pack
from rag_api.payload import CHUNK_TYPES, FROM_API, StoredChunk
from rag_api.points.collection import Collection
from rag_api.routing import Found, Target, search_target
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search
from rag_api.store import Selector

RANKED_MAX = 1000  # a listing ordered by a query ranks at most this many chunks
ANY_COSINE = -math.inf  # a listing by relevance without min_score keeps every chunk


def status(hub: Catalog, collection: Collection, indexer: dict[str, Any]) -> Status:
    """The spec's status fields (chunk count, embedding dim, sources, device, thresholds...)."""
    cfg = collection.cfg
    info = collection.info(refresh=True)
    counts = {
        "chunks": collection.count(),
        "sources": len(collection.sources()),
        "api_chunks": collection.count(API_CHUNKS),
        "temporary_chunks": collection.count(TEMPORARY),
    }
    embedder = cfg.embedder
    placement = hub.embedders.where(embedder).view()
    return Status(
        **{
            "enabled": True,
            "collection": collection.name,
            "default_collection": hub.default_visible(),
            **counts,
            "embedding_model": embedder.id,
            "embedding_dim": embedder.dim,
            **placement,  # device (or a remote model's URL), precision, query_device
            "language": cfg.language,
            "top_k": cfg.retrieval.top_k,
            "threshold": cfg.retrieval.threshold,
            "mode": cfg.retrieval.mode,
            "chunk_size": cfg.chunking.size,
            "chunk_overlap": cfg.chunking.overlap,
            "kb_path": str(collection.kb_path) if collection.kb_path else None,
            # None: listable, or no folder (fed through the API); else "kb folder missing: ..."
            "kb_folder": kb.folder_problem(collection.kb_path) if collection.kb_path else None,
            "store": hub.store.location,
            "role": hub.settings.role,
            "physical": info.physical if info else None,
            "llm": hub.generators.describe(cfg.llm),
            "rerank": hub.rerankers.describe(cfg.rerank),
            "indexer": indexer,
        }
    )


def sources(collection: Collection) -> SourceList:
    """Each source with its chunk count and whether it holds dynamic (API) chunks."""
    counts = collection.sources()  # both kept by the embedded store until the collection changes
    dynamic = collection.sources(Selector(origin=FROM_API, dynamic=True))
    items = [
        {"source": source, "chunk_count": count, "has_dynamic": source in dynamic}
        for source, count in sorted(counts.items())
    ]
    return SourceList(count=len(items), items=items)


def list_chunks(
    collection: Collection, request: ChunkFilters, metadata: Mapping[str, Any] | None = None
) -> ChunkPage:
    """A page of chunks in index order, or by relevance to `query` (cosine, above `min_score`)."""
    selector = Selector(
        sources=(request.source_exact,) if request.source_exact is not None else None,
        source_prefix=request.source_prefix,
        metadata=dict(metadata or {}),
    )
    body: dict[str, Any] = {
        "total": 0,
        "offset": request.offset,
        "limit": request.limit,
        "query": request.query,
        "items": [],
    }
    if request.query:
        hits = _ranked(collection, selector, request.query, request.min_score)
        page = [(p.stored, p.score) for p in hits[request.offset : request.offset + request.limit]]
        body["total"] = len(hits)
    else:
        body["total"], records = collection.page(selector, request.offset, request.limit)
        page = [(StoredChunk(r.payload), None) for r in records]
    body["items"] = [
        chunk_view(collection.name, p, score, request.include_text) for p, score in page
    ]
    return ChunkPage(**body)


def run_search(hub: Catalog, target: Target, request: Search) -> Found:
    """The injection's own retrieval (same algorithm, thresholds and filters) where `target`
    points: one collection, or where `auto` routes it."""
    return search_target(hub, target, request.search_request())


def search_results(hub: Catalog, target: Target, request: Search) -> SearchResults:
    """/search: what the injection would retrieve, with scores (each result naming its
    collection; through `auto`, the `routing` block too)."""
    found = run_search(hub, target, request)
    results = [result_view(p) for p in found.passages]
    head = found.head()
    return SearchResults(query=request.query, count=len(results), results=results, **head)


def context(hub: Catalog, target: Target, request: Context) -> ContextBlock:
    """/context: the block the pipeline injects, ready to use, and what it was built from; the
    header in the language asked for, else the answer's (through `auto`, rag_api.routing)."""
    started = time.perf_counter()
    found = run_search(hub, target, request)
    language = request.language or found.language
    timings = {**found.timings_ms, "total": round((time.perf_counter() - started) * 1000, 3)}
    return ContextBlock(
        block=context_block(language, found.passages),
        results=[result_view(p) for p in found.passages],
        injected=len(found.passages),
        timings_ms=timings,
        **found.head(),
    )


def context_block(language: str, passages: list[Passage]) -> str:
    """The header in the language, then `[n] (source=…, score=0.712)` and the text per chunk."""
    if not passages:
        return ""
    entries = [
        f"[{n}] (source={_where(p)}, score={shown_score(p):.3f})\n{p.text}"
        for n, p in enumerate(passages, 1)
    ]
    return pack(language).context_header + "\n" + "\n\n".join(entries)


def _where(passage: Passage) -> str:
    """The source, prefixed by its collection where collections mix (`auto`): `soporte:faq.md`."""
    if passage.collection is None:
        return passage.source
    return f"{passage.collection}:{passage.source}"


def _ranked(
    collection: Collection, selector: Selector, query: str, min_score: float | None
) -> list[Passage]:
    """Up to RANKED_MAX chunks by cosine similarity to `query` (at least `min_score`), whatever
    their labels."""
    pool = min(collection.count(selector), RANKED_MAX)
    request = SearchRequest(
        query=query,
        top_k=max(pool, 1),
        threshold=ANY_COSINE if min_score is None else min_score,
        mode="dense",
        sources=selector.sources,
        source_prefix=selector.source_prefix,
        metadata=selector.metadata,
        relative_threshold=0.0,
        rerank=False,
        diversity=0.0,
        types=CHUNK_TYPES,  # a listing shows every chunk, as in index order
        min_quality=0.0,
    )
    return search(collection, request).passages
