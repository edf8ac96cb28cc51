"""The one store interface; engines (embedded qdrant-edge, qdrant-client) implement its primitives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rag_api import payload
from rag_api.errors import StoreUnavailable
from rag_api.store.records import ExportPage
from rag_api.store.search_plan import rank_single_side, search_plan
from rag_api.store.types import (
    DENSE,
    SPARSE,
    CollectionInfo,
    Hit,
    Layout,
    PageSpec,
    PointData,
    QueryVector,
    Rebuilt,
    Record,
    SearchSpec,
    Selector,
    SparseVec,
)

PAYLOAD_INDEXES = payload.INDEXED
# integer fields no vector search filters on (a search filters on sources, metadata, type and
# quality): only scrolls, counts and deletes look them up, `seq` by its value, `chunk_index` by a
# range. Their indexes get no HNSW links (the extra graph edges an engine builds per indexed value
# for filtered searches, two thirds of an index build) and only the lookup they serve: how each
# engine creates them (the kind stays "integer"; an existing collection keeps the index it has)
UNLINKED_INDEXES: dict[str, dict[str, bool]] = {
    payload.SEQ: {"lookup": True, "range": False},
    payload.CHUNK_INDEX: {"lookup": False, "range": True},
}

Hold = Callable[[], AbstractContextManager[Any]]  # what a caller holds meanwhile (its writes)


def unlinked(field: str, kind: str) -> dict[str, bool] | None:
    """The integer index parameters of a field searches never filter on (None: the engine's default
    index of that kind, links included)."""
    params = UNLINKED_INDEXES.get(field) if kind == "integer" else None
    return None if params is None else {**params, "enable_hnsw": False}


def engine_ids(ids: Sequence[str]) -> list[int | str]:
    """Point ids as the engines take them. Qdrant's ids are unsigned integers or UUIDs and the hub
    carries every id as a string: a foreign collection's points 1, 2, 3 come back as '1', '2', '3'
    and are asked for again as integers (the hub's own ids are UUIDs)."""
    return [int(pid) if pid.isdigit() else pid for pid in ids]


def physical_name(name: str, version: int) -> str:
    """Physical collection behind a hub name: docs -> docs__v1."""
    return f"{name}__v{version}"


def version_of(physical: str) -> int:
    """The version number in a physical name (0 for a collection not created by the hub)."""
    _, sep, version = physical.rpartition("__v")
    return int(version) if sep and version.isdigit() else 0


def point_vectors(point: PointData, sparse: Callable[[SparseVec], Any]) -> dict[str, Any]:
    """A point's named vectors as both engines write them: the dense one, and the BM25 one (in the
    engine's own type, from `sparse`) when the text has terms."""
    dense = point.dense.tolist() if hasattr(point.dense, "tolist") else list(point.dense)
    vectors: dict[str, Any] = {DENSE: dense}
    if point.sparse is not None and point.sparse.indices:
        vectors[SPARSE] = sparse(point.sparse)
    return vectors


class Store(ABC):
    """A set of Qdrant collections reached through hub names (aliases)."""

    embedded: bool
    location: str

    # --- collections and aliases -------------------------------------------------------------

    @abstractmethod
    def alias_target(self, name: str) -> str | None:
        """Physical collection a hub name points to (its alias, or a collection of that very name)."""

    @abstractmethod
    def aliases(self) -> dict[str, str]:
        """Every hub name and the physical collection it points to."""

    @abstractmethod
    def physical_collections(self) -> list[str]:
        """Every physical collection in the store."""

    @abstractmethod
    def physical_info(self, physical: str) -> CollectionInfo:
        """Dimension, vector names and point count of a physical collection."""

    @abstractmethod
    def create_physical(self, physical: str, dim: int, layout: Layout = Layout()) -> None:
        """Create a collection: named dense vector (cosine) + named BM25 sparse vector (IDF)."""

    @abstractmethod
    def drop_physical(self, physical: str) -> None:
        """Delete a physical collection and its data."""

    @abstractmethod
    def set_alias(self, name: str, physical: str) -> None:
        """Point a hub name at a physical collection, atomically replacing any previous target."""

    @abstractmethod
    def remove_alias(self, name: str) -> None:
        """Forget a hub name (the physical collection stays)."""

    def info(self, name: str) -> CollectionInfo | None:
        """What the store holds behind a hub name, or None if nothing."""
        physical = self.alias_target(name)
        if physical is None:
            return None
        return self.info_at(name, physical)

    def info_at(self, name: str, physical: str) -> CollectionInfo:
        """What the store holds in `physical`, as the collection `name`."""
        info = self.physical_info(physical)
        return CollectionInfo(
            name=name,
            physical=physical,
            dim=info.dim,
            points=info.points,
            dense_name=info.dense_name,
            sparse_name=info.sparse_name,
        )

    def ensure(self, name: str, dim: int, layout: Layout = Layout()) -> CollectionInfo:
        """The collection behind a hub name, created as name__v1 (+ alias) when absent."""
        info = self.info(name)
        if info is not None:
            return info
        physical = physical_name(name, 1)
        if physical not in self.physical_collections():
            self.create_physical(physical, dim, layout)
        self.set_alias(name, physical)
        info = self.info(name)
        assert info is not None
        return info

    # --- points: the guards and the search plan here, each engine's translation below ----------

    def upsert(self, physical: str, points: Sequence[PointData]) -> None:
        """Insert or overwrite points (by id)."""
        if points:
            self._upsert(physical, points)

    def delete(self, physical: str, selector: Selector) -> None:
        """Delete the selected points."""
        if selector.selects_nothing:
            return
        if selector.ids is not None and selector == Selector(ids=selector.ids):
            self._delete_ids(physical, selector.ids)
        else:
            self._delete_where(physical, selector)

    def set_payload(self, physical: str, ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        """Set these payload fields on these points, keeping the rest (ids that are gone are
        skipped); vectors are untouched."""
        if ids:
            self._set_payload(physical, ids, fields)

    def retrieve(self, physical: str, ids: Sequence[str], with_dense: bool = False) -> list[Record]:
        """Points by id (missing ids are skipped)."""
        return self._retrieve(physical, ids, with_dense) if ids else []

    def scroll(
        self,
        physical: str,
        selector: Selector = Selector(),
        limit: int = 256,
        offset: str | None = None,
        with_dense: bool = False,
        fields: Sequence[str] | None = None,
    ) -> tuple[list[Record], str | None]:
        """A page of points in id order and the offset of the next page (None at the end)."""
        if selector.selects_nothing:
            return [], None
        return self._scroll(physical, PageSpec(selector, limit, offset, with_dense, fields))

    def export(self, physical: str, limit: int = 512) -> Iterator[ExportPage]:
        """Every point whole (dense and BM25 vectors, payload: what a backup copies), in id order,
        `limit` a page: one engine call each, made as the pages are taken."""
        offset: str | None = None
        while True:
            page, offset = self._export(physical, limit, offset)
            yield page
            if offset is None:
                return

    def count(self, physical: str, selector: Selector = Selector()) -> int:
        """Exact number of selected points."""
        return 0 if selector.selects_nothing else self._count(physical, selector)

    def facet(self, physical: str, key: str, selector: Selector = Selector()) -> dict[str, int]:
        """Point count per distinct value of a keyword payload field."""
        if selector.selects_nothing:
            return {}
        every = max(self.physical_info(physical).points, 1)
        counts = self._facet(physical, key, selector, every)
        return {value: n for value, n in counts if n > 0}

    def search(self, physical: str, spec: SearchSpec, info: CollectionInfo) -> list[Hit]:
        """Dense, sparse or hybrid (RRF or DBSF) search, hits annotated per side."""
        plan = search_plan(spec, info)
        if plan is None or spec.selector.selects_nothing:
            return []
        if plan == "hybrid":
            return self._hybrid(physical, spec, info)
        query = spec.dense if plan == "dense" else spec.sparse
        hits = self._nearest(physical, query, spec, info)
        return rank_single_side(hits, plan)

    @abstractmethod
    def _upsert(self, physical: str, points: Sequence[PointData]) -> None:
        """Write a non-empty batch of points in one request."""

    @abstractmethod
    def _delete_ids(self, physical: str, ids: Sequence[str]) -> None:
        """Delete points by id."""

    @abstractmethod
    def _delete_where(self, physical: str, selector: Selector) -> None:
        """Delete the points a filter selects."""

    @abstractmethod
    def _set_payload(self, physical: str, ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        """Set payload fields on existing points by id."""

    @abstractmethod
    def _retrieve(self, physical: str, ids: Sequence[str], with_dense: bool) -> list[Record]:
        """Points by a non-empty list of ids."""

    @abstractmethod
    def _scroll(self, physical: str, page: PageSpec) -> tuple[list[Record], str | None]:
        """The engine's scroll."""

    @abstractmethod
    def _export(
        self, physical: str, limit: int, offset: str | None
    ) -> tuple[ExportPage, str | None]:
        """The engine's scroll with every vector and the payload (an ExportPage of its records)."""

    @abstractmethod
    def _count(self, physical: str, selector: Selector) -> int:
        """The engine's exact count."""

    @abstractmethod
    def _facet(
        self, physical: str, key: str, selector: Selector, limit: int
    ) -> list[tuple[str, int]]:
        """The engine's exact facet: (value, count) for up to `limit` values."""

    @abstractmethod
    def _nearest(
        self, physical: str, query: QueryVector, spec: SearchSpec, info: CollectionInfo
    ) -> list[Hit]:
        """One side's top `spec.limit`: a dense vector (a list) or a BM25 one (a SparseVec)."""

    @abstractmethod
    def _hybrid(self, physical: str, spec: SearchSpec, info: CollectionInfo) -> list[Hit]:
        """The fused top `spec.limit`, annotated from each side's candidates (annotate()); a hit
        carries its stored dense vector when `spec.with_dense` asks, and one outside the dense
        candidates its cosine (its dense score, or the vector annotate() computes it from)."""

    @abstractmethod
    def payload_indexes(self, physical: str) -> dict[str, str]:
        """The indexed payload fields and their kinds (keyword, integer, float, bool)."""

    @abstractmethod
    def create_payload_index(self, physical: str, field: str, kind: str) -> None:
        """Index a payload field (a dotted path such as metadata.categoria) for filtering."""

    def ensure_payload_indexes(self, physical: str, fields: Mapping[str, str]) -> list[str]:
        """Create the missing indexes among `fields` (path -> kind); returns the fields created."""
        existing = self.payload_indexes(physical)
        missing = [f for f, kind in fields.items() if existing.get(f) != kind]
        for field in missing:
            self.create_payload_index(physical, field, fields[field])
        return missing

    def optimize(self, physical: str, hold: Hold = nullcontext) -> None:
        """Build indexes after a bulk load (a no-op where the engine does it itself); `hold()`
        is held while the shard's files are read or replaced (a backup's copy waits)."""
        return None

    def rebuild(self, physical: str) -> Rebuilt:
        """Replace a collection that holds unreadable data with everything still readable."""
        raise StoreUnavailable(
            self.location, "only the embedded store can be rebuilt here; restore a snapshot"
        )

    def close(self) -> None:
        """Release the engine (flushes the embedded store)."""
        return None

    def iter_records(
        self,
        physical: str,
        selector: Selector = Selector(),
        with_dense: bool = False,
        fields: Sequence[str] | None = None,
        page: int = 1024,
    ) -> Iterator[Record]:
        """Every selected point, paging through scroll."""
        offset: str | None = None
        while True:
            records, offset = self.scroll(physical, selector, page, offset, with_dense, fields)
            yield from records
            if offset is None:
                return

    def sources(self, physical: str, selector: Selector = Selector()) -> dict[str, int]:
        """Chunk count per source."""
        return self.facet(physical, payload.SOURCE, selector)
