"""Either engine's point objects (qdrant-edge's and qdrant-client's share attribute names) made into
the store's own: records, whole points for a backup, hits."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rag_api.store.types import SPARSE, Hit, PointData, Record, SparseVec


def dense_of(vector: Any) -> list[float] | None:
    """The dense vector out of an engine's vector field (a named map or a bare list)."""
    if isinstance(vector, dict):
        vector = next(iter(vector.values()), None)
    return list(vector) if vector is not None else None


def record_from(point: Any, with_dense: bool) -> Record:
    """A Record from either engine's point object (same attribute names on both)."""
    dense = dense_of(point.vector) if with_dense else None
    return Record(id=str(point.id), payload=point.payload or {}, dense=dense)


def point_from(point: Any, dense_name: str) -> PointData:
    """A whole point (both vectors, payload) from either engine's record read with its vectors."""
    raw = point.vector  # an engine builds its Python lists anew on each access: read it once
    vectors = raw if isinstance(raw, dict) else {dense_name: raw}
    dense = vectors.get(dense_name) or dense_of(raw) or []
    bm25 = vectors.get(SPARSE)
    sparse = None if bm25 is None else SparseVec(list(bm25.indices), list(bm25.values))
    return PointData(str(point.id), dense if isinstance(dense, list) else list(dense),
                     point.payload or {}, sparse)  # fmt: skip


class ExportPage(Sequence[PointData]):
    """A page of whole points, made from the engine's records when first read: a backup keeps the
    records it read under the hold (the engine's own copies) and builds the points' Python lists
    after it, at its own pace."""

    def __init__(self, records: list[Any], dense_name: str) -> None:
        self._records, self._dense_name = records, dense_name
        self._points: list[PointData] | None = None

    def points(self) -> list[PointData]:
        if self._points is None:
            self._points = [point_from(r, self._dense_name) for r in self._records]
            self._records = []
        return self._points

    def __len__(self) -> int:
        return len(self._points if self._points is not None else self._records)

    def __getitem__(self, index):  # type: ignore[override]
        return self.points()[index]

    def __iter__(self) -> Iterator[PointData]:
        return iter(self.points())


def hit_from(point: Any, with_dense: bool) -> Hit:
    """A Hit from either engine's scored point."""
    dense = dense_of(point.vector) if with_dense else None
    return Hit(id=str(point.id), score=float(point.score), payload=point.payload or {}, dense=dense)


def id_scores(points: list[Any]) -> list[tuple[str, float]]:
    return [(str(p.id), float(p.score)) for p in points]
