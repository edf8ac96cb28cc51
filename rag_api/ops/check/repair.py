"""`rag-hub check --repair`: apply a collection's RepairPlan with the hub's own write path."""

from __future__ import annotations

import logging

from rag_api.indexing import kb
from rag_api.indexing.sync import SyncReport, file_scope, index_files
from rag_api.ops.check.findings import Repair
from rag_api.ops.check.inspection import RepairPlan
from rag_api.points.collection import Collection
from rag_api.store import PointData, Selector

log = logging.getLogger("rag_api.ops.check.repair")


def apply_repairs(
    collection: Collection, plan: RepairPlan, max_bytes: int = kb.DEFAULT_MAX_BYTES
) -> list[Repair]:
    """Rebuild an unreadable store; complete torn replacements, delete duplicates and orphans,
    re-index files, restore BM25 vectors; say what was done."""
    name = collection.name
    done: list[Repair] = []
    if plan.rebuild:
        done.append(_rebuild(collection, plan.rebuild))
    if plan.torn:
        torn = collection.recover()  # found again under the lock: a write may have settled one
        points = sum(len(document.doomed) for document in torn)
        detail = f"{len(torn)} documents, {points} points deleted"
        done.append(Repair(name, "kept the newest version", detail))
    if plan.duplicates:
        deleted = collection.delete(Selector(ids=tuple(sorted(plan.duplicates))))
        done.append(Repair(name, "deleted duplicates", f"{deleted} points"))
    for rel in sorted(plan.orphans):
        deleted = collection.delete(file_scope([rel]))
        done.append(Repair(name, "deleted orphans", f"{rel}: {deleted} chunks"))
    if plan.reindex and collection.kb_path is not None:
        report = SyncReport(name)
        files = kb.stat_files(collection.kb_path, plan.reindex, max_bytes)[0]
        index_files(collection, [(f, None) for f in files], report)
        detail = f"{report.indexed} files, {report.stats.written} chunks"
        if report.errors:
            detail += f"; failed: {', '.join(sorted(report.errors))}"
        done.append(Repair(name, "re-indexed files", detail))
    if plan.sparse:
        restored = _restore_sparse(collection, sorted(plan.sparse))
        done.append(Repair(name, "restored BM25 vectors", f"{restored} points"))
    for repair in done:
        log.info("%s: %s: %s", name, repair.action, repair.detail)
    return done


def _rebuild(collection: Collection, physical: str) -> Repair:
    """Rebuild a collection whose store holds unreadable points, with every reader and writer
    waiting; what it drops that came from kb files is re-indexed by the next pass."""
    with collection.exclusive():
        rebuilt = collection.store.rebuild(physical)
    collection.invalidate()
    detail = f"{rebuilt.kept} points kept, {len(rebuilt.dropped)} unreadable dropped"
    if rebuilt.dropped:
        detail += f" ({', '.join(rebuilt.dropped[:5])}{' …' if len(rebuilt.dropped) > 5 else ''})"
    if not rebuilt.replayed:
        detail += (
            "; its write-ahead log replayed only up to the unreadable write: that write and the "
            "ones after it since the last flush (a clean stop flushes) are lost"
        )
    return Repair(collection.name, "rebuilt the store", f"{detail}; old data in {rebuilt.old_copy}")


def _restore_sparse(collection: Collection, ids: list[str]) -> int:
    """Rewrite points with their BM25 vector, keeping their dense vector and payload."""
    with collection.batch() as batch:
        records = batch.records(Selector(ids=tuple(ids)), fields=None, with_dense=True)
        points = [
            PointData(r.id, r.dense, r.payload, collection.sparse_of(r.payload))
            for r in records
            if r.dense is not None
        ]
        batch.upsert(points)
    return len(points)
