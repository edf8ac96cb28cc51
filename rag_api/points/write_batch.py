"""A batch of writes to one physical collection: what `Collection.batch()` yields to a writer.

A replacement is atomic for readers: it holds the collection's points lock alone while it reads
the scope, stamps each point with its chunk number and the document's generation, overwrites by
id and deletes what is left over (one engine operation each, whole even across a crash). A group
of whole documents is replaced the same way, one operation of each kind for them all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from rag_api import payload
from rag_api.points import generations
from rag_api.points.locks import ReadWriteLock
from rag_api.points.repetition import Census, Repetition
from rag_api.points.sequence import ChunkSequence
from rag_api.store import PointData, Record, Selector, Store

STAMP_FIELDS = [payload.SEQ, payload.GEN]  # what a replacement reads of the points it replaces


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
        return self.replace_each([(scope, points, seqs)])[0]

    def replace_each(
        self, items: Sequence[tuple[Selector, Sequence[PointData], Sequence[int] | None]]
    ) -> list[int]:
        """`replace` for several scopes, in turn; where they are whole documents of one kind,
        each named once (`documents`), in one engine operation of each kind for them all: one
        read, one upsert, one delete, so a group of documents is one write, whole even across a
        crash. Returns how many points each scope lost."""
        if not all(seqs for _, _, seqs in items):
            self.sequence.prime(self._physical)  # the first write's scan, outside readers' way
        with self._points_lock.write():
            # read the scopes now, under the lock: a concurrent writer may have added points
            found = self.records_each([scope for scope, _, _ in items], STAMP_FIELDS)
            if found is None:
                return [self._replace([item], [self._existing(item[0])])[0] for item in items]
            return self._replace(items, [{r.id: r.payload for r in own} for own in found])

    def records_each(
        self, scopes: Sequence[Selector], fields: Sequence[str], with_dense: bool = False
    ) -> list[list[Record]] | None:
        """Each scope's points, read in one piece where the scopes are whole documents of one
        kind, each named once (`documents`), taking no lock of its own; None where they are not
        (then each is read on its own)."""
        together = documents(scopes)
        if together is None:
            return None
        selector, key = together
        found: dict[Any, list[Record]] = {}
        for record in self.store.iter_records(self._physical, selector, with_dense, [*fields, key]):
            found.setdefault(record.payload.get(key), []).append(record)
        return [found.get(_document_name(scope), []) for scope in scopes]

    def _replace(
        self,
        items: Sequence[tuple[Selector, Sequence[PointData], Sequence[int] | None]],
        found: list[dict[str, dict[str, Any]]],
    ) -> list[int]:
        """Under the points lock: write `items` over the points `found` in their scopes."""
        store, physical = self.store, self._physical
        now = datetime.now(UTC).isoformat(timespec="seconds")
        stamped: list[PointData] = []
        stale: list[list[str]] = []
        for (scope, points, seqs), existing in zip(items, found, strict=True):
            numbers = list(seqs) if seqs else self._numbers([p.id for p in points], existing)
            own = [
                PointData(p.id, p.dense, payload.stamped(p.payload, seq, now), p.sparse)
                for p, seq in zip(points, numbers, strict=True)
            ]
            # a whole document (a scope by source or file) gets a new generation of it
            replaced = existing.values() if scope.ids is None else None
            generations.stamp(store, physical, [p.payload for p in own], replaced)
            stamped += own
            keep = {p.id for p in points}
            stale.append([pid for pid in existing if pid not in keep])
        # one operation each: the engine applies it whole or not at all, even across a crash
        store.upsert(physical, stamped)
        doomed = tuple(pid for own in stale for pid in own)
        if doomed:
            store.delete(physical, Selector(ids=doomed))
        removed = {pid: body for existing in found for pid, body in existing.items()}
        self._repetition.written(physical, self.language, removed, stamped)
        return [len(own) for own in stale]

    def upsert(self, points: Sequence[PointData]) -> None:
        """Overwrite points by id, payloads as they are."""
        with self._points_lock.write():
            self.store.upsert(self._physical, points)
            self._repetition.written(self._physical, self.language, [], points)

    def _existing(self, scope: Selector) -> dict[str, dict[str, Any]]:
        records = self.store.iter_records(self._physical, scope, fields=STAMP_FIELDS)
        return {record.id: record.payload for record in records}

    def _numbers(self, ids: list[str], existing: dict[str, dict[str, Any]]) -> list[int]:
        """Each point's chunk number: the one it already has when overwritten in place, else new."""
        kept = [payload.StoredChunk(existing.get(pid, {})).seq for pid in ids]
        fresh = iter(self.sequence.allocate(self._physical, kept.count(None)))
        return [seq if seq is not None else next(fresh) for seq in kept]


def documents(scopes: Sequence[Selector]) -> tuple[Selector, str] | None:
    """One selector for the points of several scopes that each select one whole document of one
    kind (a kb file, or a source's document, by name), and the payload field that names the
    document a point belongs to; None for one scope, or scopes of another shape."""
    if len(scopes) < 2:
        return None
    for name, key, unnamed in (
        ("files", payload.FILE, "sources"),
        ("sources", payload.SOURCE, "files"),
    ):
        named = [getattr(scope, name) for scope in scopes]
        if not all(names is not None and len(names) == 1 for names in named):
            continue
        if getattr(scopes[0], unnamed) is not None:  # named one way only (_document_name)
            continue
        rest = [replace(scope, **{name: None}) for scope in scopes]
        distinct = {names[0] for names in named}
        if all(each == rest[0] for each in rest) and len(distinct) == len(scopes):
            return replace(scopes[0], **{name: tuple(sorted(distinct))}), key
    return None


def _document_name(scope: Selector) -> str | None:
    """A one-document scope's name: its file, else its source."""
    names = scope.files or scope.sources
    return names[0] if names else None
