"""A Qdrant server or cluster through qdrant-client (and its in-memory mode, the tests' stand-in)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

from qdrant_client import QdrantClient
from qdrant_client import models as m

from rag_api.errors import StoreUnavailable, redact
from rag_api.store.base import PAYLOAD_INDEXES, Store, engine_ids, point_vectors, unlinked
from rag_api.store.filters import FilterTypes, engine_filter
from rag_api.store.fusion import Missing, Scored, fuse, one_sided
from rag_api.store.records import ExportPage, dense_of, hit_from, id_scores, record_from
from rag_api.store.search_plan import (
    HNSW_EF_CONSTRUCT,
    HNSW_FULL_SCAN_KB,
    HNSW_M,
    annotate,
    cosine,
    hnsw_ef,
)
from rag_api.store.system import SystemDocs
from rag_api.store.types import (
    DENSE,
    SPARSE,
    CollectionInfo,
    Hit,
    Layout,
    PageSpec,
    PointData,
    QueryVector,
    Record,
    SearchSpec,
    Selector,
    SparseVec,
)

T = TypeVar("T")
_SCHEMA = {
    "keyword": m.PayloadSchemaType.KEYWORD,
    "integer": m.PayloadSchemaType.INTEGER,
    "float": m.PayloadSchemaType.FLOAT,
    "bool": m.PayloadSchemaType.BOOL,
}
# a new collection's dense graph (rag_api.store.search_plan), set on the dense vector as the embedded engine
# does, so both report it there
_GRAPH = m.HnswConfigDiff(
    m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=HNSW_FULL_SCAN_KB
)


class RemoteStore(Store):
    """Collections, aliases and payload indexes on a Qdrant server (or `:memory:` for tests)."""

    embedded = False

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.location = redact(url)  # shown in /ready, reports and logs
        if url == ":memory:":
            self._client = QdrantClient(location=":memory:")
            self._guard: Any = threading.RLock()  # the in-memory engine is not thread-safe
        else:
            self._client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout))
            self._guard = nullcontext()
        self._infos: dict[str, tuple[int, str, str | None]] = {}
        self.system = SystemDocs(self._client, self._call)
        self._owner = True  # closes the client at the end

    @classmethod
    def sharing(cls, client: QdrantClient, guard: Any, location: str) -> RemoteStore:
        """A store on a client another store uses too, behind the same guard: the tests' stand-in
        for several processes on one Qdrant deployment (tests/replicas)."""
        store = cls.__new__(cls)
        store.location, store._client, store._guard = location, client, guard
        store._infos = {}
        store.system = SystemDocs(client, store._call)
        store._owner = False  # the client outlives this store
        return store

    @property
    def client(self) -> tuple[QdrantClient, Any]:
        """The client and its guard, for `sharing`."""
        return self._client, self._guard

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            with self._guard, warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # local mode: "indexes have no effect"
                return fn(*args, **kwargs)
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"Qdrant at {self.location}", str(exc)) from exc

    # --- collections and aliases -------------------------------------------------------------

    def alias_target(self, name: str) -> str | None:
        physical = self.aliases().get(name)
        if physical is not None:
            return physical
        return name if self._call(self._client.collection_exists, name) else None

    def aliases(self) -> dict[str, str]:
        response = self._call(self._client.get_aliases)
        return {a.alias_name: a.collection_name for a in response.aliases}

    def physical_collections(self) -> list[str]:
        response = self._call(self._client.get_collections)
        return sorted(c.name for c in response.collections)

    def physical_info(self, physical: str) -> CollectionInfo:
        dim, dense_name, sparse_name = self._vector_layout(physical)
        return CollectionInfo(
            name=physical,
            physical=physical,
            dim=dim,
            points=self.count(physical),
            dense_name=dense_name,
            sparse_name=sparse_name,
        )

    def _vector_layout(self, physical: str) -> tuple[int, str, str | None]:
        if physical not in self._infos:
            params = self._call(self._client.get_collection, physical).config.params
            vectors = params.vectors
            if isinstance(vectors, m.VectorParams):
                dense_name, size = "", vectors.size
            else:
                vectors = vectors or {}
                dense_name = DENSE if DENSE in vectors else next(iter(vectors), DENSE)
                size = vectors[dense_name].size if dense_name in vectors else 0
            sparse = params.sparse_vectors or {}
            self._infos[physical] = (size, dense_name, SPARSE if SPARSE in sparse else None)
        return self._infos[physical]

    def create_physical(self, physical: str, dim: int, layout: Layout = Layout()) -> None:
        self._call(
            self._client.create_collection,
            physical,
            vectors_config={
                DENSE: m.VectorParams(size=dim, distance=m.Distance.COSINE, hnsw_config=_GRAPH)
            },
            sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
            shard_number=layout.shard_number,
            replication_factor=layout.replication_factor,
        )
        for field, kind in PAYLOAD_INDEXES.items():
            self.create_payload_index(physical, field, kind)

    def payload_indexes(self, physical: str) -> dict[str, str]:
        # the in-memory stand-in keeps no indexes: it reports none, and creating one is a no-op
        schema = self._call(self._client.get_collection, physical).payload_schema or {}
        return {field: str(index.data_type.value) for field, index in schema.items()}

    def create_payload_index(self, physical: str, field: str, kind: str) -> None:
        params = unlinked(field, kind)
        schema: Any = _SCHEMA[kind]
        if params is not None:
            schema = m.IntegerIndexParams(type=m.IntegerIndexType.INTEGER, **params)
        self._call(self._client.create_payload_index, physical, field, schema, wait=True)

    def drop_physical(self, physical: str) -> None:
        self._infos.pop(physical, None)
        self._call(self._client.delete_collection, physical)

    def set_alias(self, name: str, physical: str) -> None:
        operations: list[Any] = []
        if name in self.aliases():
            operations.append(m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=name)))
        operations.append(
            m.CreateAliasOperation(
                create_alias=m.CreateAlias(collection_name=physical, alias_name=name)
            )
        )
        # one request: Qdrant applies the delete and the create together
        self._call(self._client.update_collection_aliases, change_aliases_operations=operations)

    def remove_alias(self, name: str) -> None:
        if name in self.aliases():
            op = m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=name))
            self._call(self._client.update_collection_aliases, change_aliases_operations=[op])

    # --- points ------------------------------------------------------------------------------

    def _upsert(self, physical: str, points: Sequence[PointData]) -> None:
        structs = [
            m.PointStruct(id=p.id, vector=point_vectors(p, _sparse), payload=p.payload)
            for p in points
        ]
        self._call(self._client.upsert, physical, points=structs, wait=True)

    def _delete_ids(self, physical: str, ids: Sequence[str]) -> None:
        target = m.PointIdsList(points=list(ids))
        self._call(self._client.delete, physical, points_selector=target, wait=True)

    def _delete_where(self, physical: str, selector: Selector) -> None:
        target = m.FilterSelector(filter=_filter(selector) or m.Filter())
        self._call(self._client.delete, physical, points_selector=target, wait=True)

    def _set_payload(self, physical: str, ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        target = m.PointIdsList(points=list(ids))
        self._call(self._client.set_payload, physical, dict(fields), points=target, wait=True)

    def _retrieve(self, physical: str, ids: Sequence[str], with_dense: bool) -> list[Record]:
        dense_name = self._vector_layout(physical)[1]
        records = self._call(
            self._client.retrieve,
            physical,
            ids=engine_ids(ids),
            with_payload=True,
            with_vectors=_with_vector(dense_name) if with_dense else False,
        )
        return [record_from(r, with_dense) for r in records]

    def _scroll(self, physical: str, page: PageSpec) -> tuple[list[Record], str | None]:
        dense_name = self._vector_layout(physical)[1]
        records, next_offset = self._call(
            self._client.scroll,
            physical,
            scroll_filter=_filter(page.selector),
            limit=page.limit,
            offset=page.offset,
            with_payload=_payload(page.fields),
            with_vectors=_with_vector(dense_name) if page.with_dense else False,
        )
        return [record_from(r, page.with_dense) for r in records], (
            None if next_offset is None else str(next_offset)
        )

    def _export(
        self, physical: str, limit: int, offset: str | None
    ) -> tuple[ExportPage, str | None]:
        dense_name = self._vector_layout(physical)[1]
        records, next_offset = self._call(
            self._client.scroll,
            physical,
            limit=limit,
            offset=offset,
            with_payload=True,
            with_vectors=True,
        )
        return ExportPage(records, dense_name), None if next_offset is None else str(next_offset)

    def _count(self, physical: str, selector: Selector) -> int:
        result = self._call(
            self._client.count, physical, count_filter=_filter(selector), exact=True
        )
        return result.count

    def _facet(
        self, physical: str, key: str, selector: Selector, limit: int
    ) -> list[tuple[str, int]]:
        response = self._call(
            self._client.facet,
            physical,
            key=key,
            facet_filter=_filter(selector),
            limit=limit,
            exact=True,
        )
        return [(str(h.value), h.count) for h in response.hits]

    def _nearest(
        self, physical: str, query: QueryVector, spec: SearchSpec, info: CollectionInfo
    ) -> list[Hit]:
        dense = not isinstance(query, SparseVec)
        response = self._call(
            self._client.query_points,
            physical,
            query=list(query) if dense else _sparse(query),
            using=(info.dense_name or None) if dense else info.sparse_name,
            query_filter=_filter(spec.selector),
            limit=spec.limit,
            search_params=_params(spec.limit) if dense else None,
            with_payload=_payload(spec.fields),
            with_vectors=_with_vector(info.dense_name) if spec.with_dense else False,
        )
        return [hit_from(p, spec.with_dense) for p in response.points]

    def _hybrid(self, physical: str, spec: SearchSpec, info: CollectionInfo) -> list[Hit]:
        assert spec.dense is not None and spec.sparse is not None
        flt, side, vector = _filter(spec.selector), spec.candidates, _with_vector(info.dense_name)
        # the two sides in one batch, with payloads, fused here (rag_api.store.fusion: the server
        # has no weighted DBSF) exactly as the embedded engine's are; stored vectors only where
        # needed: BM25's candidates (annotate() takes the cosine of a hit outside the dense ones
        # from its vector) and, for MMR, the dense ones
        requests = [
            m.QueryRequest(
                query=list(spec.dense),
                using=info.dense_name or None,
                filter=flt,
                limit=side,
                params=_params(side),
                with_payload=_payload(spec.fields),
                with_vector=vector if spec.with_dense else False,
            ),
            m.QueryRequest(
                query=_sparse(spec.sparse),
                using=info.sparse_name,
                filter=flt,
                limit=side,
                with_payload=_payload(spec.fields),
                with_vector=vector,
            ),
        ]
        dense_pts, sparse_pts = self._call(
            self._client.query_batch_points, physical, requests=requests
        )
        dense, sparse = id_scores(dense_pts.points), id_scores(sparse_pts.points)
        points = {str(p.id): p for p in [*sparse_pts.points, *dense_pts.points]}
        missing = self._missing(physical, spec, info, points, dense, sparse)
        top = fuse(dense, sparse, spec.fusion, spec.rrf_k, spec.weighting, missing)[: spec.limit]
        hits = [hit_from(points[pid], True) for pid, _ in top]
        for hit, (_, score) in zip(hits, top, strict=True):
            hit.score = score
        return annotate(hits, dense, sparse, spec.dense)

    def _missing(
        self,
        physical: str,
        spec: SearchSpec,
        info: CollectionInfo,
        points: dict[str, Any],
        dense: Scored,
        sparse: Scored,
    ) -> Missing | None:
        """For complete-score fusion, each side's score of the best candidates only the other
        side listed: the cosine of BM25-only ones from the vectors they came with, the BM25 score
        of dense-only ones from a sparse query over those points alone (which does not return a
        point that shares no term with the query: 0)."""
        if not spec.completes:
            return None
        assert spec.dense is not None and spec.sparse is not None
        cosines = {
            pid: cosine(spec.dense, vector)
            for pid in one_sided(sparse, dense)
            if (vector := dense_of(points[pid].vector)) is not None
        }
        dense_only = one_sided(dense, sparse)
        if not dense_only:
            return Missing(cosines)
        response = self._call(
            self._client.query_points,
            physical,
            query=_sparse(spec.sparse),
            using=info.sparse_name,
            query_filter=_filter(Selector(ids=tuple(dense_only))),
            limit=len(dense_only),
            with_payload=False,
        )
        return Missing(cosines, dict.fromkeys(dense_only, 0.0) | dict(id_scores(response.points)))

    def close(self) -> None:
        if self._owner:
            self._call(self._client.close)


def _sparse(vector: SparseVec) -> m.SparseVector:
    return m.SparseVector(indices=vector.indices, values=vector.values)


def _payload(fields: Sequence[str] | None) -> Any:
    """Only these payload fields of each point, or all of them (None)."""
    return list(fields) if fields else True


def _params(limit: int) -> m.SearchParams:
    return m.SearchParams(hnsw_ef=hnsw_ef(limit))


def _with_vector(dense_name: str) -> Any:
    return [dense_name] if dense_name else True


FILTER_TYPES = FilterTypes(
    filter=m.Filter,
    field=m.FieldCondition,
    any=lambda values: m.MatchAny(any=values),
    prefix=lambda prefix: m.MatchPrefix(prefix=prefix),
    ids=lambda ids: m.HasIdCondition(has_id=engine_ids(ids)),
    equals=lambda value: m.MatchValue(value=value),
    range=m.Range,
    has_vector=lambda name: m.HasVectorCondition(has_vector=name),
)


def _filter(selector: Selector) -> m.Filter | None:
    return engine_filter(selector, FILTER_TYPES)
