"""A source -> its documents in a collection, by the folder's rules: only new and changed documents
are read and embedded (the source compares versions, the chunks' content hashes decide what is
embedded), each document replaced atomically, and nothing removed without evidence: a document
goes when the source says so (`Gone`) or when a whole listing lacks it, and a mass of removals
at once (or an empty listing) waits for `prune`.

The stages overlap: while the scan fetches and this thread reads and chunks, a writer thread
embeds and writes what was read before, in batches that grow while the model is busy."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_api import payload
from rag_api.indexing.chunking import UnreadableFile
from rag_api.indexing.ingest import DocumentWrite, NotWritten, WriteStats, log_written
from rag_api.indexing.pipeline import Done, Pipeline, PipelineFailed
from rag_api.indexing.sync import mass_removal
from rag_api.indexing.throughput import Throughput
from rag_api.jobs.lane import Stopped
from rag_api.points.collection import Collection
from rag_api.sources.base import (
    Document,
    Failed,
    Gone,
    Incomplete,
    Item,
    Known,
    Skipped,
    Source,
    Unchanged,
)
from rag_api.sources.reading import read_document
from rag_api.store import Selector

log = logging.getLogger("rag_api.sources.sync")
FIELDS = [payload.SOURCE, payload.DOC_HASH, payload.FILE_CHUNKS, payload.VERSION, payload.URL]


def document_name(source: str, key: str) -> str:
    """A source document's name in the collection (its chunks' `source`): `source:key`."""
    return f"{source}:{key}"


def scope(source: str, key: str | None = None) -> Selector:
    """The chunks of one document of a source (all of its documents without `key`)."""
    if key is None:
        return Selector(origin=payload.FROM_SOURCE, source_prefix=f"{source}:")
    return Selector(origin=payload.FROM_SOURCE, sources=(document_name(source, key),))


@dataclass
class Held:
    """What the collection holds of one document of a source."""

    hashes: set[str] = field(default_factory=set)  # its chunks' doc_hash (one when whole)
    chunks: int = 0
    written_with: int | None = None  # the chunks it was written with
    version: dict[str, str] = field(default_factory=dict)
    url: str | None = None

    @property
    def whole(self) -> bool:
        return len(self.hashes) == 1 and self.chunks == self.written_with

    def same(self, doc_hash: str, document: Document) -> bool:
        """Whether writing `document` would change nothing."""
        fresh = self.hashes == {doc_hash} and self.version == document.version
        return self.whole and fresh and self.url == document.url


def held_documents(collection: Collection, source: str) -> dict[str, Held]:
    """Each document of the source the collection holds, by its key."""
    found: dict[str, Held] = {}
    prefix = f"{source}:"
    for record in collection.scan(scope(source), fields=FIELDS):
        chunk = payload.StoredChunk(record.payload)
        if not chunk.source.startswith(prefix):
            continue
        held = found.setdefault(chunk.source[len(prefix) :], Held())
        held.hashes.add(chunk.doc_hash)
        held.chunks += 1
        if held.written_with is None:
            held.written_with, held.version, held.url = chunk.file_chunks, chunk.version, chunk.url
    return found


@dataclass
class SourceReport:
    collection: str
    source: str
    kind: str
    listed: int = 0  # documents the source holds now (read, unchanged, or failed)
    unchanged: int = 0
    indexed: int = 0  # documents written: new or changed
    bytes: int = 0  # of the documents read
    stats: WriteStats = field(default_factory=WriteStats)
    removed: list[str] = field(default_factory=list)  # keys whose chunks were removed
    failed: dict[str, str] = field(default_factory=dict)  # key -> why (its chunks kept)
    skipped: dict[str, str] = field(default_factory=dict)  # key -> why it is not indexed
    warnings: dict[str, list[str]] = field(default_factory=dict)
    incomplete: str | None = None  # why the listing was not whole (nothing removed for absence)
    held: str | None = None  # why removals were held
    expected: int | None = None  # documents the source said it would list
    throughput: Throughput = field(default_factory=Throughput)
    seconds: float = 0.0

    def written(self, stats: WriteStats) -> None:
        """A document written (new or changed): counted."""
        self.indexed += 1
        self.stats.add(stats)

    def as_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "source": self.source,
            "kind": self.kind,
            "listed": self.listed,
            "unchanged": self.unchanged,
            "indexed": self.indexed,
            "removed": len(self.removed),
            "failed": len(self.failed),
            "bytes": self.bytes,
            "chunks_embedded": self.stats.embedded,
            "chunks_reused": self.stats.reused,
            "chunks_deleted": self.stats.deleted,
            "chunks_written": self.stats.written,
            "errors": self.failed,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "incomplete": self.incomplete,
            "held": self.held,
            "seconds": round(self.seconds, 3),
            "throughput": self.throughput.as_dict(),
        }


Progress = Callable[[SourceReport], None]


def sync_source(
    collection: Collection,
    source: Source,
    *,
    prune: bool = False,
    force: bool = False,
    progress: Progress | None = None,
) -> SourceReport:
    """Make the collection hold what the source holds now (`force`: read every document again,
    ignoring the versions). The scan's failure is re-raised once what it read is written; nothing
    is removed then. Stops between documents when the source's context says the hub is stopping
    (jobs.lane.Stopped)."""
    started = time.monotonic()
    cfg, context = source.cfg, source.context
    report = SourceReport(collection.name, cfg.name, cfg.kind)
    context.expect = lambda total: setattr(report, "expected", total)
    collection.writable()  # a model or dimension mismatch stops here, before anything is read
    held = held_documents(collection, cfg.name)
    known = {} if force else {k: Known(h.version, h.url) for k, h in held.items() if h.whole}
    seen: set[str] = set()
    gone: dict[str, str] = {}
    writer = Pipeline(collection, *_writes_heard(collection, cfg.name, report), report.throughput)
    failure: Exception | None = None
    with tempfile.TemporaryDirectory(prefix="rag-sync-") as scratch:
        try:
            for item in source.scan(known):
                if context.stopping.is_set():
                    raise Stopped()
                _take(item, collection, cfg.name, held, Path(scratch), report, writer)
                if isinstance(item, Gone):
                    gone[item.key] = item.reason
                elif not isinstance(item, Skipped | Incomplete):
                    seen.add(item.key)
                if progress is not None:
                    progress(report)
        except (Stopped, PipelineFailed):
            raise
        except Exception as exc:  # the listing failed: keep what was read, remove nothing
            failure = exc
            report.incomplete = f"the listing failed: {_reason(exc)}"
        finally:
            source.close()
            writer.finish()  # the pipeline's failure, if any, raised here
    if failure is None:
        _remove(collection, cfg.name, held, seen, gone, report, prune)
    report.seconds = time.monotonic() - started
    if progress is not None:
        progress(report)
    if failure is not None:
        raise failure
    return report


def _writes_heard(
    collection: Collection, source: str, report: SourceReport
) -> tuple[Done, NotWritten]:
    """What the pipeline tells of each document: written (counted, logged) or not (why)."""

    def done(write: DocumentWrite, stats: WriteStats) -> None:
        report.written(stats)
        log_written(log, collection, write.scope.sources[0], stats)

    def failed(write: DocumentWrite, reason: str) -> None:
        name = write.scope.sources[0]
        report.failed[name.removeprefix(f"{source}:")] = reason
        log.warning("%s: %s: %s", collection.name, name, reason)

    return done, failed


def _take(
    item: Item,
    collection: Collection,
    source: str,
    held: dict[str, Held],
    scratch: Path,
    report: SourceReport,
    writer: Pipeline,
) -> None:
    """Apply one item of the scan (a document read is handed to the writer)."""
    if isinstance(item, Incomplete):
        report.incomplete = report.incomplete or item.reason
        return
    if isinstance(item, Skipped):
        report.skipped[item.key] = item.reason
        return
    if isinstance(item, Gone):
        return
    report.listed += 1
    if isinstance(item, Unchanged):
        report.unchanged += 1
    elif isinstance(item, Failed):
        report.failed[item.key] = item.reason
        log.warning("%s: %s: %s: %s", collection.name, source, item.key, item.reason)
    else:
        _read(item, collection, source, held.get(item.key), scratch, report, writer)


def _read(
    document: Document,
    collection: Collection,
    source: str,
    held: Held | None,
    scratch: Path,
    report: SourceReport,
    writer: Pipeline,
) -> None:
    report.bytes += len(document.data)
    name = document_name(source, document.key)
    try:
        read = read_document(collection, name, document, scratch)
    except UnreadableFile as exc:  # as a kb file: reported, its chunks (if any) left as they were
        report.failed[document.key] = str(exc)
        log.warning("%s: skipped %s: %s", collection.name, name, exc)
        return
    if read.warnings:
        report.warnings[document.key] = read.warnings
    if held is not None and held.same(read.doc_hash, document):
        report.unchanged += 1
        return
    provenance = payload.source_provenance(
        read.doc_hash, len(read.chunks), document.version, document.url
    )
    was = document.renamed_from
    reuse = scope(source, was) if was is not None and was != document.key else None
    writer.put(
        DocumentWrite(collection, scope(source, document.key), read.chunks, provenance, reuse)
    )


def _remove(
    collection: Collection,
    source: str,
    held: dict[str, Held],
    seen: set[str],
    gone: dict[str, str],
    report: SourceReport,
    prune: bool,
) -> None:
    """Remove the documents the source says are gone and, after a whole listing, those it lacks;
    a mass of them, or every one, only with `prune`."""
    absent = {} if report.incomplete else dict.fromkeys(set(held) - seen, "not listed")
    doomed = {key: why for key, why in {**absent, **gone}.items() if key in held}
    if not doomed:
        return
    emptied = not seen and len(doomed) == len(held)
    if not prune and (mass_removal(len(held), len(doomed)) or emptied):
        listing = "came back empty" if emptied else f"lacks {len(doomed)} of {len(held)} documents"
        report.held = (
            f"the listing {listing} (e.g. {', '.join(sorted(doomed)[:3])}): nothing removed; "
            f"if they were deleted on purpose, `rag-hub sync {collection.name} {source} --prune` "
            "removes them"
        )
        log.warning("%s: %s: %s", collection.name, source, report.held)
        return
    for key, why in sorted(doomed.items()):
        deleted = collection.delete(scope(source, key))
        report.stats.deleted += deleted
        report.removed.append(key)
        log.info(
            "%s: removed %s (%d chunks): %s",
            collection.name,
            document_name(source, key),
            deleted,
            why,
            extra={"event": "removed", "collection": collection.name, "chunks": deleted},
        )


def _reason(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(message.split())[:300]
