"""The bounded queue that indexes uploaded files, and the one worker thread that drains it with the
watcher's own `sync_collection(only=[file])` (docs/architecture.md, "uploads")."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from rag_api.catalog import Catalog
from rag_api.errors import QueueFull, RagError, UpstreamUnavailable
from rag_api.indexing.sync import file_scope, sync_collection
from rag_api.uploads.file_status import FileFailures
from rag_api.uploads.jobs import Job, JobBook, JobFile

log = logging.getLogger("rag_api.uploads")
RETRY_AFTER_DEFAULT_S = 5
RETRY_AFTER_MAX_S = 300
UPSTREAM_RETRIES = 4  # an unreachable embedder or store: tried again after 1, 2, 4, 8 s
UPSTREAM_RETRY_FIRST_S = 1.0


class _Stopping(Exception):
    """The hub stops while a file waits for a retry: the job stays unfinished, run at next start."""


class IndexQueue:
    """Jobs waiting to be indexed, and the worker that indexes them one file at a time."""

    def __init__(self, hub: Catalog, book: JobBook, capacity: int) -> None:
        self.hub = hub
        self.book = book
        self.capacity = capacity
        self.failures = FileFailures()
        self._waiting: deque[Job] = deque()
        self._running: Job | None = None
        self._reserved = 0
        self._durations: deque[float] = deque(maxlen=20)
        self._cond = threading.Condition()
        self._stop = False
        self._file_locks: dict[str, threading.Lock] = {}
        self._thread = threading.Thread(target=self._run, name="rag-uploads", daemon=True)

    def start(self) -> IndexQueue:
        """Queue again the jobs a restart cut short, then start the worker."""
        with self._cond:
            self._waiting.extend(self.book.unfinished())
        if self._waiting:
            log.info("re-queued %d upload jobs a restart cut short", len(self._waiting))
        self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop after the file being indexed; jobs still queued run at the next start."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a place in the queue while a request writes its files (QueueFull when none is
        left); `submit` the job inside the block, or the place is given back."""
        with self._cond:
            if len(self._waiting) + self._reserved >= self.capacity:
                raise QueueFull(
                    f"the indexing queue is full ({self.capacity} jobs waiting, "
                    "RAG_UPLOAD_QUEUE); nothing was written, retry later",
                    self.retry_after(),
                )
            self._reserved += 1
        try:
            yield
        finally:
            with self._cond:
                self._reserved -= 1

    def submit(self, job: Job) -> None:
        with self._cond:
            self._waiting.append(job)
            self._cond.notify_all()

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the recent mean job time times the jobs ahead."""
        if not self._durations:
            return RETRY_AFTER_DEFAULT_S
        mean = sum(self._durations) / len(self._durations)
        return max(1, min(RETRY_AFTER_MAX_S, math.ceil(mean * max(len(self._waiting), 1))))

    @contextmanager
    def file_lock(self, collection: str) -> Iterator[None]:
        """Held while a collection's file is indexed or deleted: a delete never races the
        indexing of the same file (which would leave the chunks of a file that is gone)."""
        with self._cond:
            lock = self._file_locks.setdefault(collection, threading.Lock())
        with lock:
            yield

    # --- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                job = self._running = self._waiting.popleft()
            started = time.monotonic()
            try:
                self._index(job)
            except Exception:  # the worker outlives any failure; the job says what happened
                log.exception("upload job %s failed", job.id)
            with self._cond:
                self._running = None
            self._durations.append(time.monotonic() - started)

    def _index(self, job: Job) -> None:
        self.book.start(job)
        for item in job.files:
            with self._cond:
                if self._stop:
                    return  # left queued in its file: the next start runs it again
            self.book.file_started(job, item)
            try:
                outcome = self._index_file(job.collection, item)
            except _Stopping:
                return
            self.book.file_finished(job, item, **outcome)
        self.book.finish(job)

    def _index_file(self, name: str, item: JobFile) -> dict[str, object]:
        """Index one uploaded file, again after a while if the embedder or the store cannot be
        reached; what its JobFile records."""
        for attempt in range(UPSTREAM_RETRIES + 1):
            try:
                return self._try_file(name, item)
            except UpstreamUnavailable as exc:
                if attempt == UPSTREAM_RETRIES:
                    return self._failed(name, item.path, exc.message)
                delay = UPSTREAM_RETRY_FIRST_S * 2**attempt
                log.warning("%s: %s: retry in %.0f s: %s", name, item.path, delay, exc.message)
                with self._cond:
                    if self._cond.wait_for(lambda: self._stop, timeout=delay):
                        raise _Stopping from None
        raise AssertionError("unreachable")

    def _try_file(self, name: str, item: JobFile) -> dict[str, object]:
        rel = item.path

        def ocr_page(_: str, page: int, pages: int) -> None:
            self.book.file_progress(item, f"OCR page {page}/{pages}")

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
