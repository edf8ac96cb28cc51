"""The hub's types in qdrant-edge's terms: points, filters, queries, search parameters and payload
index kinds (the embedded engine's translation; rag_api.store.edge runs it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import qdrant_edge as qe

from rag_api.store.base import engine_ids
from rag_api.store.filters import FilterTypes, engine_filter
from rag_api.store.search_plan import HNSW_EF_CONSTRUCT, HNSW_FULL_SCAN_KB, HNSW_M, hnsw_ef
from rag_api.store.types import CollectionInfo, Selector, SparseVec

# Below this many points a search scans exactly (always right, still sub-millisecond); above it
# the HNSW graph built by optimize() answers, with the beam of hnsw_ef() (exact at 20k: 1.74 ms).
EXACT_BELOW = 20_000
SCHEMA = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
}
KIND = {schema: kind for kind, schema in SCHEMA.items()}


def sparse_vector(vector: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(vector.indices, vector.values)


def _match(value: str | int | bool) -> qe.MatchValue:
    # the binding reads a Python bool as an int (True -> 1), which never matches a JSON boolean;
    # numpy's bool is not an int subclass and arrives as a boolean
    return qe.MatchValue(np.bool_(value) if isinstance(value, bool) else value)


FILTER_TYPES = FilterTypes(
    filter=qe.Filter,
    field=qe.FieldCondition,
    any=qe.MatchAny,
    prefix=qe.MatchPrefix,
    ids=lambda ids: qe.HasIdCondition(set(engine_ids(ids))),
    equals=_match,
    range=qe.RangeFloat,
    has_vector=qe.HasVectorCondition,
)


def selector_filter(selector: Selector) -> qe.Filter | None:
    return engine_filter(selector, FILTER_TYPES)


def dense_query(vector: Sequence[float], info: CollectionInfo) -> Any:
    return qe.Query.Nearest(list(vector), using=info.dense_name)


def sparse_query(vector: SparseVec, info: CollectionInfo) -> Any:
    return qe.Query.Nearest(sparse_vector(vector), using=info.sparse_name)


def search_params(info: CollectionInfo, limit: int) -> qe.SearchParams:
    if info.points < EXACT_BELOW:
        return qe.SearchParams(exact=True)
    return qe.SearchParams(hnsw_ef=hnsw_ef(limit))


def dense_params(dim: int) -> qe.EdgeVectorParams:
    """A new collection's dense vector: cosine, with the hub's HNSW graph (rag_api.store.search_plan)."""
    graph = qe.HnswIndexConfig(
        m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=HNSW_FULL_SCAN_KB
    )
    return qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, hnsw_config=graph)


def among(query: Any, ids: Sequence[Any], exact: bool = False) -> qe.QueryRequest:
    """`query` scored over these points alone (the engine's ids; every one of them it matches),
    exactly when asked: each side's own score of candidates a search found by other means."""
    return qe.QueryRequest(
        limit=len(ids),
        query=query,
        filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
        params=qe.SearchParams(exact=True) if exact else None,
    )


def point_key(pid: Any) -> int:
    """A point's key in a hybrid search (keyed_scores): a UUID's 128-bit integer, an integer id n
    as ~n (negative: never a UUID's)."""
    return ~pid if isinstance(pid, int) else pid.int


def keyed_scores(points: Sequence[Any], ids: dict[int, Any]) -> list[tuple[int, float]]:
    """(key, score) of each scored point, its engine id kept in `ids` under its key. A hybrid
    search joins and fuses ~250 candidates by id and returns ~10: keyed by integers they hash and
    compare in C, and only the returned hits' ids become strings (str() of a UUID costs ~1.3 us, in
    Python: ~0.3 ms a search)."""
    keyed = []
    for point in points:
        pid = point.id
        key = point_key(pid)
        ids[key] = pid
        keyed.append((key, point.score))
    return keyed


def payload_selector(fields: Sequence[str] | None) -> Any:
    """Only these payload fields of each point, or all of them (None)."""
    return qe.PayloadSelector.Include(list(fields)) if fields else True


def str_id(pid: Any) -> str | None:
    return None if pid is None else str(pid)
