"""Make one physical collection a re-embedded copy of another, touching only what differs.

The same pass builds a migration's new collection, resumes one that crashed (points already
copied are skipped) and catches up with writes that reached the live collection meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_api.errors import MigrationFailed
from rag_api.indexing.ingest import content_hash, embed_texts
from rag_api.metadata import value_problem
from rag_api.payload import extract_text, migrated
from rag_api.points.collection import Collection
from rag_api.store import PointData, Selector

BATCH = 64  # points embedded and written per step: one progress tick, one upsert
Progress = Callable[[int, int], None]  # (points examined, points in the source)


@dataclass
class CopyStats:
    examined: int = 0
    embedded: int = 0
    unchanged: int = 0
    deleted: int = 0

    @property
    def changes(self) -> int:
        return self.embedded + self.deleted


def migrated_payload(payload: dict[str, Any], target: Collection) -> dict[str, Any]:
    """The payload a point carries in the target collection: same fields, the target's model."""
    text = extract_text(payload)
    prefix = target.cfg.embedder.document_prefix
    return migrated(payload, target.embedder_id, content_hash(text, prefix))


def fingerprints(target: Collection, target_physical: str) -> dict[str, str]:
    """What the target holds, point id -> payload fingerprint (one read of the whole collection)."""
    return {r.id: _fingerprint(r.payload) for r in target.store.iter_records(target_physical)}


def copy_points(
    source: str,
    target: Collection,
    target_physical: str,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    known: dict[str, str] | None = None,
) -> CopyStats:
    """Re-embed into `target_physical` every point of `source` it lacks or holds differently,
    with ids, payloads and BM25 vectors kept, and delete what `source` no longer has.

    `known` is the target's `fingerprints()`; passed in, it is kept current here, so a caller
    making several passes reads the target once (else it is read now)."""
    store = target.store
    have = fingerprints(target, target_physical) if known is None else known
    seen: set[str] = set()
    total = store.count(source)
    stats = CopyStats()
    batch: list[tuple[str, dict[str, Any]]] = []
    for record in store.iter_records(source):
        if cancel is not None and cancel.is_set():
            raise MigrationFailed("the migration was cancelled; run it again to resume")
        payload = migrated_payload(record.payload, target)
        if not extract_text(payload).strip():
            raise MigrationFailed(
                f"point {record.id} of {source} has no text to re-embed; "
                "`rag-hub check --repair` or delete it, then run the migration again"
            )
        if problem := value_problem(payload):  # copied, it could make the new collection unreadable
            raise MigrationFailed(
                f"point {record.id} of {source} has a payload the store cannot hold "
                f"({problem[1]}); `rag-hub check --repair` or delete it, then run the migration again"
            )
        stats.examined += 1
        seen.add(record.id)
        if have.get(record.id) == _fingerprint(payload):
            stats.unchanged += 1
        else:
            batch.append((record.id, payload))
        if len(batch) >= BATCH:
            stats.embedded += _write(target, target_physical, batch, have)
            batch = []
        if progress is not None and (stats.examined % BATCH == 0 or stats.examined == total):
            progress(stats.examined, total)
    stats.embedded += _write(target, target_physical, batch, have)
    stale = [pid for pid in have if pid not in seen]
    if stale:
        store.delete(target_physical, Selector(ids=tuple(stale)))
        stats.deleted = len(stale)
        for pid in stale:
            del have[pid]
    if progress is not None:
        progress(stats.examined, max(total, stats.examined))
    return stats


def _write(
    target: Collection,
    physical: str,
    batch: list[tuple[str, dict[str, Any]]],
    have: dict[str, str],
) -> int:
    if not batch:
        return 0
    texts = [extract_text(payload) for _, payload in batch]
    vectors = embed_texts(target, texts)
    sparse = [target.sparse_of(body) for _, body in batch]
    points = [
        PointData(pid, vector, payload, sv)
        for (pid, payload), vector, sv in zip(batch, vectors, sparse, strict=True)
    ]
    target.store.upsert(physical, points)
    have.update((pid, _fingerprint(payload)) for pid, payload in batch)
    return len(points)


def _fingerprint(payload: dict[str, Any]) -> str:
    data = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(data.encode(), digest_size=16).hexdigest()
