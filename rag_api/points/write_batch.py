"""A batch of writes to one physical collection: what `Collection.batch()` yields to a writer.

A replacement is atomic for readers: it holds the collection's points lock alone while it reads
the scope, stamps each point with its chunk number and the document's generation, overwrites by
id and deletes what is left over (one engine operation each, whole even across a crash).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rag_api import payload
from rag_api.points import generations
from rag_api.points.locks import ReadWriteLock
from rag_api.points.repetition import Census, Repetition
from rag_api.points.sequence import ChunkSequence
from rag_api.store import PointData, Record, Selector, Store


@dataclass(frozen=True, slots=True)
class Replacement:
    """The points one scope (a document) is to hold, with their chunk numbers if chosen."""

    scope: Selector
    points: Sequence[PointData]
    seqs: Sequence[int] | None = None


@dataclass
class _Pending:
    """What replacements of one write upsert and delete, and the points they replace."""

    existing: dict[str, dict[str, Any]] = field(default_factory=dict)
    points: list[PointData] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)  # every id replaced or written

    def touches(self, existing: dict[str, Any], points: Sequence[PointData]) -> bool:
        return any(pid in self.ids for pid in existing) or any(p.id in self.ids for p in points)

    def add(self, existing: dict[str, Any], points: list[PointData], stale: list[str]) -> None:
        self.existing.update(existing)
        self.points += points
        self.stale += stale
        self.ids.update(existing, (p.id for p in points))


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
        return self.replace_all([Replacement(scope, points, seqs)])[0]

    def replace_all(self, replacements: Sequence[Replacement]) -> list[int]:
        """Several replacements, each as `replace` makes it, in one engine write: their points
        upserted in one operation and their leftovers deleted in one (a group of documents costs
        the engine two operations, not two each); how many points each one deleted. One that
        touches points an earlier one of the same call touches is written after it."""
        store, physical = self.store, self._physical
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if any(not r.seqs for r in replacements):
            self.sequence.prime(physical)  # the first write's scan, outside the readers' way
        deleted: list[int] = []

        def now_in(scope: Selector) -> dict[str, dict[str, Any]]:
            # read under the lock: a concurrent writer may have added points
            records = store.iter_records(physical, scope, fields=[payload.SEQ, payload.GEN])
            return {record.id: record.payload for record in records}

        with self._points_lock.write():
            pending = _Pending()
            for r in replacements:
                existing = now_in(r.scope)
                if pending.touches(existing, r.points):
                    self._write(pending)
                    pending = _Pending()
                    existing = now_in(r.scope)
                numbers = (
                    list(r.seqs) if r.seqs else self._numbers([p.id for p in r.points], existing)
                )
                stamped = [
                    PointData(p.id, p.dense, payload.stamped(p.payload, seq, now), p.sparse)
                    for p, seq in zip(r.points, numbers, strict=True)
                ]
                # a whole document (a scope by source or file) gets a new generation of it
                replaced = existing.values() if r.scope.ids is None else None
                generations.stamp(store, physical, [p.payload for p in stamped], replaced)
                keep = {p.id for p in r.points}
                stale = [pid for pid in existing if pid not in keep]
                pending.add(existing, stamped, stale)
                deleted.append(len(stale))
            self._write(pending)
        return deleted

    def _write(self, pending: _Pending) -> None:
        """Under the points lock: one operation each, which the engine applies whole or not at
        all, even across a crash."""
        if pending.points:
            self.store.upsert(self._physical, pending.points)
        if pending.stale:
            self.store.delete(self._physical, Selector(ids=tuple(pending.stale)))
        self._repetition.written(self._physical, self.language, pending.existing, pending.points)

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
