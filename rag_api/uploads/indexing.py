"""The bounded queue that indexes uploaded files: the hub's `upload` lane (rag_api.jobs.lane), whose
one worker indexes each job's files with the watcher's own `sync_collection(only=[file])`
(docs/architecture.md, "uploads")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial

from rag_api.catalog import Catalog
from rag_api.errors import IndexingFailed, RagError, UpstreamUnavailable
from rag_api.indexing.sync import file_scope, sync_collection
from rag_api.jobs.job import Job, JobFile
from rag_api.jobs.lane import Report, Stopped
from rag_api.uploads.file_status import FileFailures

log = logging.getLogger("rag_api.uploads")
UPSTREAM_RETRIES = 4  # an unreachable embedder or store: tried again after 1, 2, 4, 8 s
UPSTREAM_RETRY_FIRST_S = 1.0


class IndexQueue:
    """Upload jobs waiting to be indexed, and the worker that indexes them one file at a time."""

    def __init__(self, hub: Catalog, capacity: int) -> None:
        self.hub = hub
        self.jobs = hub.jobs
        self.lane = hub.jobs.lane("upload", capacity)
        self.failures = FileFailures()
        self._file_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def start(self) -> IndexQueue:
        """Queue again the jobs a restart cut short (or a stop left waiting), then run."""
        self.lane.resume()
        again = self.jobs.unfinished("upload")
        for job in again:
            self.submit(job)
        if again:
            log.info("re-queued %d upload jobs a restart cut short", len(again))
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop after the file being indexed; jobs still queued run at the next start."""
        self.lane.stop(timeout)

    def slot(self) -> AbstractContextManager[None]:
        """Hold a place in the queue while a request writes its files (QueueFull when none is
        left); `submit` the job inside the block, or the place is given back."""
        return self.lane.slot(
            f"the indexing queue is full ({self.lane.capacity} jobs waiting, "
            "RAG_UPLOAD_QUEUE); nothing was written, retry later"
        )

    def submit(self, job: Job) -> None:
        self.lane.submit(job, partial(self._index, job))

    def retry_after(self) -> int:
        return self.lane.retry_after()

    @contextmanager
    def file_lock(self, collection: str) -> Iterator[None]:
        """Held while a collection's file is indexed or deleted: a delete never races the
        indexing of the same file (which would leave the chunks of a file that is gone)."""
        with self._lock:
            lock = self._file_locks.setdefault(collection, threading.Lock())
        with lock:
            yield

    # --- worker -----------------------------------------------------------------------------

    def _index(self, job: Job, report: Report) -> dict[str, int]:
        """Index the job's files in turn: its answer, the chunks of them all; IndexingFailed
        when any file failed (each file says why)."""
        assert job.files is not None and job.collection is not None
        with self.jobs.changing(job):
            for item in job.files:
                item.status, item.error = "queued", None
        for n, item in enumerate(job.files):
            if self.lane.stopping.is_set():
                raise Stopped  # left queued in its file: the next start runs it again
            report("files", n, len(job.files))
            with self.jobs.changing(job):
                item.status = "indexing"
            outcome = self._index_file(job, item)
            with self.jobs.changing(job):
                for key, value in outcome.items():
                    setattr(item, key, value)
                item.status = "failed" if item.error else "done"
                item.progress = None
        report("files", len(job.files), len(job.files))
        failed = [item for item in job.files if item.status == "failed"]
        if failed:
            reasons = "; ".join(f"{item.path}: {item.error}" for item in failed[:3])
            more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
            raise IndexingFailed(
                f"{len(failed)} of {len(job.files)} files could not be indexed: {reasons}{more}"
            )
        return {
            "chunks": sum(item.chunks or 0 for item in job.files),
            "embedded": sum(item.embedded for item in job.files),
            "skipped": sum(item.skipped for item in job.files),
        }

    def _index_file(self, job: Job, item: JobFile) -> dict[str, object]:
        """Index one uploaded file, again after a while if the embedder or the store cannot be
        reached; what its JobFile records."""
        assert job.collection is not None
        name = job.collection
        for attempt in range(UPSTREAM_RETRIES + 1):
            try:
                return self._try_file(job, item)
            except UpstreamUnavailable as exc:
                if attempt == UPSTREAM_RETRIES:
                    return self._failed(name, item.path, exc.message)
                delay = UPSTREAM_RETRY_FIRST_S * 2**attempt
                log.warning("%s: %s: retry in %.0f s: %s", name, item.path, delay, exc.message)
                if self.lane.stopping.wait(delay):
                    raise Stopped from None
        raise AssertionError("unreachable")

    def _try_file(self, job: Job, item: JobFile) -> dict[str, object]:
        assert job.collection is not None
        name, rel = job.collection, item.path

        def ocr_page(_: str, page: int, pages: int) -> None:
            with self.jobs.changing(job):
                item.progress = f"OCR page {page}/{pages}"

        try:
            collection = self.hub.collection(name)
            with self.file_lock(name):
                report = sync_collection(
                    collection,
                    max_bytes=self.hub.settings.max_file_bytes,
                    only=[rel],
                    on_ocr_page=ocr_page,
                )
        except UpstreamUnavailable:
            raise
        except RagError as exc:
            return self._failed(name, rel, exc.message)
        except Exception as exc:
            log.exception("%s: indexing the upload %s failed", name, rel)
            return self._failed(name, rel, f"{type(exc).__name__}: {exc}")
        if rel in report.errors:
            return self._failed(name, rel, report.errors[rel])
        if rel in report.skipped:
            return self._failed(name, rel, f"skipped: {report.skipped[rel]}")
        if rel not in report.current:
            return {"error": "the file is gone: deleted or moved before it was indexed"}
        self.failures.forget(name, rel)
        stats = report.per_file.get(rel)
        if stats is None:  # unchanged: indexed already (by the watcher, or an earlier run)
            chunks = collection.count(file_scope([rel]))
            return {"chunks": chunks, "embedded": 0, "skipped": chunks, "error": None}
        return {
            "chunks": stats.written,
            "embedded": stats.embedded,
            "skipped": stats.written - stats.embedded,
            "error": None,
        }

    def _failed(self, name: str, rel: str, reason: str) -> dict[str, object]:
        collection = self.hub.collections.get(name)  # gone from collections.yaml since?
        root = collection.kb_path if collection is not None else None
        if root is not None:
            self.failures.record(name, root / rel, rel, reason)
        return {"error": reason}
