"""A batch of writes to one physical collection: what `Collection.batch()` yields to a writer.

A replacement is atomic for readers: it holds the collection's points lock alone while it reads
the scope, stamps each point with its chunk number and the document's generation, overwrites by
id and deletes what is left over (one engine operation each, whole even across a crash).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from rag_api import payload
from rag_api.points import generations
from rag_api.points.locks import ReadWriteLock
from rag_api.points.repetition import Census, Repetition
from rag_api.points.sequence import ChunkSequence
from rag_api.store import PointData, Record, Selector, Store


class Batch:
    """Writes to the physical collection the hub name pointed at when the batch began."""

    def __init__(
        self,
        store: Store,
        points_lock: ReadWriteLock,
        sequence: ChunkSequence,
        repetition: Repetition,
        language: str,
        physical: str,
    ) -> None:
        self.store = store
        self._points_lock = points_lock  # the collection's: readers see a replacement whole
        self.sequence = sequence
        self._repetition = repetition
        self.language = language  # the collection's, for labels
        self._physical = physical

    def census(self) -> Census:
        """The lines repeated across the collection (boilerplate labels, rag_api.points.labels)."""
        return self._repetition.census(self._physical, self.language)

    def records(
        self, selector: Selector, fields: Sequence[str] | None = None, with_dense: bool = False
    ) -> Iterator[Record]:
        """The selected points, streamed without the points lock (vectors to reuse)."""
        return self.store.iter_records(self._physical, selector, with_dense, fields)

    def replace(
        self, scope: Selector, points: Sequence[PointData], seqs: Sequence[int] | None = None
    ) -> int:
        """Make the points `scope` selects exactly `points`, atomically for readers: overwrite by
        id, delete what is left over; returns how many were deleted. Each point is stamped with
        its chunk number (`seqs`, else the one its id already has, else a fresh one)."""
        store, physical = self.store, self._physical
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if not seqs:
            self.sequence.prime(physical)  # the first write's scan, outside the readers' way
        with self._points_lock.write():
            # read the scope now, under the lock: a concurrent writer may have added points
            records = store.iter_records(physical, scope, fields=[payload.SEQ, payload.GEN])
            existing = {r.id: r.payload for r in records}
            numbers = list(seqs) if seqs else self._numbers([p.id for p in points], existing)
            stamped = [
                PointData(p.id, p.dense, payload.stamped(p.payload, seq, now), p.sparse)
                for p, seq in zip(points, numbers, strict=True)
            ]
            # a whole document (a scope by source or file) gets a new generation of it
            replaced = existing.values() if scope.ids is None else None
            generations.stamp(store, physical, [p.payload for p in stamped], replaced)
            # one operation each: the engine applies it whole or not at all, even across a crash
            store.upsert(physical, stamped)
            keep = {p.id for p in points}
            stale = [pid for pid in existing if pid not in keep]
            if stale:
                store.delete(physical, Selector(ids=tuple(stale)))
            self._repetition.written(physical, self.language, existing, stamped)
        return len(stale)

    def upsert(self, points: Sequence[PointData]) -> None:
        """Overwrite points by id, payloads as they are."""
        with self._points_lock.write():
            self.store.upsert(self._physical, points)
            self._repetition.written(self._physical, self.language, [], points)

    def _numbers(self, ids: list[str], existing: dict[str, dict[str, Any]]) -> list[int]:
        """Each point's chunk number: the one it already has when overwritten in place, else new."""
        kept = [payload.StoredChunk(existing.get(pid, {})).seq for pid in ids]
        fresh = iter(self.sequence.allocate(self._physical, kept.count(None)))
        return [seq if seq is not None else next(fresh) for seq in kept]
