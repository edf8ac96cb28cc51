"""What a search runs and what its hits carry, on either engine: the query vectors a mode needs,
the plan (hybrid, dense or sparse), the dense HNSW graph and beam, and each hit's per-side
scores and ranks."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from rag_api.store.types import CollectionInfo, Hit, SearchSpec


def search_sides(mode: str, info: CollectionInfo) -> tuple[bool, bool]:
    """Which query vectors (dense, sparse) a search in `mode` needs; a collection written without
    BM25 vectors (by another tool, or an older hub) is searched dense."""
    sparse = mode != "dense" and info.has_sparse
    return mode != "sparse" or not sparse, sparse


def search_plan(spec: SearchSpec, info: CollectionInfo) -> str | None:
    """What a search runs: hybrid, dense or sparse; None when no query vector is usable. A BM25
    query of stop words only has no terms: the dense side answers alone."""
    dense = spec.dense is not None
    sparse = spec.sparse is not None and bool(spec.sparse.indices) and info.has_sparse
    if dense and sparse:
        return "hybrid"
    return "dense" if dense else "sparse" if sparse else None


# The dense vectors' HNSW graph, set when a collection is created and kept by it for its life (a
# collection created with other values keeps its graph until it is migrated into a new one).
# Qdrant's default degree (m 16) built with twice its default ef_construct (100). Measured on
# SciFact (20,829 MiniLM chunks, docs/retrieval.md): the 100 dense candidates of a hybrid search
# at hnsw_ef 256 have recall 0.995 against 0.993, and the hybrid nDCG@10 of exact search; the build
# takes about twice as long, a hybrid query no longer (the dense side alone +0.4 ms; a search pays
# for the degree: m 32 reaches 0.998 at +0.9 ms).
HNSW_M = 16
HNSW_EF_CONSTRUCT = 200
HNSW_FULL_SCAN_KB = 10_000  # Qdrant's default: below this many KB of vectors a segment scans


def hnsw_ef(limit: int) -> int:
    """The HNSW beam for a dense search returning `limit` points. Measured on SciFact (20k MiniLM
    chunks) against exact search: the 50 dense candidates of a hybrid search have recall 0.988 at
    ef 128 and 0.9975 at 256 (+0.17 ms); a dense top-5 has recall 1.0 at ef 128 (0.30 ms vs 0.48)."""
    return 128 if limit <= 10 else 256


def annotate(
    fused: list[Hit],
    dense: Sequence[tuple[Hashable, float]] | None,
    sparse: Sequence[tuple[Hashable, float]] | None,
    query_dense: Sequence[float] | None,
    key: Callable[[str], Hashable] | None = None,
) -> list[Hit]:
    """Fill each hit's dense/sparse score and 1-based rank from the per-side candidate lists,
    which name a candidate by its id, or by `key(hit id)` when given (edge_requests.keyed_scores).

    A hit outside the dense candidates still gets its exact dense score (the engine's, or computed
    here from its stored vector), so the cosine threshold can judge every hit on the same scale.
    Equal fused scores (frequent with RRF: ranks 1+5 tie with 5+1) are ordered by dense score, not
    by engine accident, so both engines return the same order.
    """
    dense_at = {pid: (rank, score) for rank, (pid, score) in enumerate(dense or [], 1)}
    sparse_at = {pid: (rank, score) for rank, (pid, score) in enumerate(sparse or [], 1)}
    query = None if query_dense is None else np.asarray(query_dense, dtype=np.float64)
    for hit in fused:
        pid = hit.id if key is None else key(hit.id)
        if pid in dense_at:
            hit.dense_rank, hit.dense_score = dense_at[pid]
        elif hit.dense_score is None and query is not None and hit.dense is not None:
            hit.dense_score = cosine(query, hit.dense)
        if pid in sparse_at:
            hit.sparse_rank, hit.sparse_score = sparse_at[pid]
    fused.sort(key=lambda h: (-h.score, -(h.dense_score if h.dense_score is not None else -2.0)))
    return fused


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))  # numpy, not a Python loop
    return float(x @ y) / norm if norm else 0.0


def rank_single_side(hits: list[Hit], side: str) -> list[Hit]:
    """A one-sided search: each hit's score is that side's score, its position that side's rank."""
    for rank, hit in enumerate(hits, 1):
        setattr(hit, f"{side}_rank", rank)
        setattr(hit, f"{side}_score", hit.score)
    return hits
