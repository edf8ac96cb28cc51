"""Folder -> collection: index new and changed kb files, drop the chunks of files that are gone."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rag_api import kb
from rag_api.chunking import UnreadableFile, read_chunks
from rag_api.collection import Collection
from rag_api.ingest import (
    EMBED_BATCH_CHUNKS,
    DocumentWrite,
    WriteStats,
    delete_points,
    write_documents,
)
from rag_api.store import Selector

log = logging.getLogger("rag_api.sync")
FILE_FIELDS = ["file", "doc_hash"]


@dataclass
class SyncReport:
    collection: str
    files: int = 0
    unchanged: int = 0
    indexed: int = 0
    removed: int = 0
    stats: WriteStats = field(default_factory=WriteStats)
    errors: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "collection": self.collection,
            "files": self.files,
            "unchanged": self.unchanged,
            "indexed": self.indexed,
            "removed_files": self.removed,
            "chunks_embedded": self.stats.embedded,
            "chunks_reused": self.stats.reused,
            "chunks_deleted": self.stats.deleted,
            "chunks_written": self.stats.written,
            "errors": self.errors,
            "warnings": self.warnings,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


def stored_files(collection: Collection) -> dict[str, set[str]]:
    """Each indexed kb file and the content hashes its chunks carry (more than one = half-updated)."""
    info = collection.info()
    if info is None:
        return {}
    found: dict[str, set[str]] = {}
    records = collection.store.iter_records(
        info.physical, Selector(origin="file"), fields=FILE_FIELDS
    )
    for record in records:
        name = record.payload.get("file")
        if isinstance(name, str):
            found.setdefault(name, set()).add(str(record.payload.get("doc_hash")))
    return found


def file_write(
    collection: Collection, item: kb.KbFile, data_hash: str, reembed: bool = False
) -> tuple[DocumentWrite, list[str]]:
    """The write that makes a kb file's chunks current, and the reader's warnings."""
    result = read_chunks(item.path, item.rel, collection.cfg.chunking)
    payload = {"origin": "file", "file": item.rel, "doc_hash": data_hash}
    scope = Selector(origin="file", file=item.rel)
    write = DocumentWrite(collection, scope, result.chunks, payload, reembed=reembed)
    return write, result.warnings


def sync_collection(
    collection: Collection,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
    max_bytes: int = kb.DEFAULT_MAX_BYTES,
) -> SyncReport:
    """Reconcile the collection with its kb folder; `force` re-embeds every file.

    Chunks that came through the API are never touched. An unreadable file is reported and its
    previous chunks, if any, are left as they were.
    """
    started = time.monotonic()
    report = SyncReport(collection.name)
    if collection.kb_path is None:
        return report
    collection.writable()  # a model or dimension mismatch stops here, even if no file changed
    files, report.skipped = kb.scan(collection.kb_path, max_bytes)
    report.files = len(files)
    stored = stored_files(collection)
    if force:
        writes = [(item, None) for item in files]
    else:
        writes = []
        for item in files:
            current = _hash_file(item, collection, report)
            if current is None:
                continue
            if stored.get(item.rel) == {current}:
                report.unchanged += 1
                if progress:
                    progress(1)
            else:
                writes.append((item, current))
    index_files(collection, writes, report, progress, reembed=force)
    present = {item.rel for item in files}
    for rel in sorted(set(stored) - present):
        deleted = delete_points(collection, Selector(origin="file", file=rel))
        report.removed += 1
        report.stats.deleted += deleted
        log.info("%s: removed %s (%d chunks): file is gone", collection.name, rel, deleted)
    report.seconds = time.monotonic() - started
    return report


def index_files(
    collection: Collection,
    items: Iterable[tuple[kb.KbFile, str | None]],
    report: SyncReport,
    progress: Callable[[int], None] | None = None,
    reembed: bool = False,
) -> None:
    """Index kb files (with their content hash, computed when None), embedding in shared batches;
    `reembed` ignores the stored vectors of unchanged chunks."""
    batch: list[DocumentWrite] = []
    size = 0
    for item, current in items:
        current = current or _hash_file(item, collection, report)
        if current is None:
            continue
        try:
            write, warnings = file_write(collection, item, current, reembed)
        except UnreadableFile as exc:
            report.errors[item.rel] = str(exc)
            log.warning("%s: skipped %s: %s", collection.name, item.rel, exc)
            if progress:
                progress(1)
            continue
        if warnings:
            report.warnings[item.rel] = warnings
            for warning in warnings:
                log.warning("%s: %s: %s", collection.name, item.rel, warning)
        batch.append(write)
        size += len(write.chunks)
        if size >= EMBED_BATCH_CHUNKS:
            _flush(collection, batch, report, progress)
            batch, size = [], 0
    _flush(collection, batch, report, progress)


def _flush(
    collection: Collection,
    batch: list[DocumentWrite],
    report: SyncReport,
    progress: Callable[[int], None] | None,
) -> None:
    def done(write: DocumentWrite, stats: WriteStats) -> None:
        report.indexed += 1
        log.info(
            "%s: indexed %s: %d chunks (embedded %d, reused %d, deleted %d)",
            collection.name,
            write.payload["file"],
            stats.written,
            stats.embedded,
            stats.reused,
            stats.deleted,
        )
        if progress:
            progress(1)

    if batch:
        report.stats.add(write_documents(collection, batch, on_done=done))


def _hash_file(item: kb.KbFile, collection: Collection, report: SyncReport) -> str | None:
    try:
        return kb.doc_hash(item.path.read_bytes(), collection.cfg.chunking)
    except OSError as exc:
        report.errors[item.rel] = exc.strerror or str(exc)
        log.warning("%s: skipped %s: %s", collection.name, item.rel, report.errors[item.rel])
        return None
