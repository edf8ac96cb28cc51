"""The writer stage of a source's sync: the documents read are embedded and written on a thread
of their own while the scan reads the next ones."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from rag_api.indexing.ingest import EMBED_BATCH_CHUNKS, DocumentWrite, WriteStats, write_documents
from rag_api.points.collection import Collection

log = logging.getLogger("rag_api.sources.sync")
Written = Callable[[WriteStats], None]  # hears each document written
WAITING = 64  # documents read and waiting for the writer: the scan pauses beyond
QUIET_S = 0.05  # the writer writes what it holds once nothing more came for this long
_END = object()


class WriterFailed(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Writer:
    """Embeds and writes the documents read, in batches, on a thread of its own: a batch is
    written once it reaches EMBED_BATCH_CHUNKS or nothing more waits, so batches are small while
    the reading is slow and large while the model is the slower stage. Its failure (an embedder
    down) stops the sync at the next document: what was written stays."""

    def __init__(self, collection: Collection, written: Written) -> None:
        self.collection = collection
        self.written = written
        self.error: Exception | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=WAITING)
        self._thread = threading.Thread(target=self._run, name="rag-sync-writer", daemon=True)
        self._thread.start()

    def put(self, write: DocumentWrite) -> None:
        while True:
            if self.error is not None:
                raise WriterFailed(self.error)
            try:
                self._queue.put(write, timeout=0.5)
                return
            except queue.Full:
                continue

    def finish(self) -> None:
        """Write what is left and wait for it; WriterFailed if a write failed."""
        if self.error is None:
            self._queue.put(_END)
        else:
            _drain(self._queue)
        self._thread.join()
        if self.error is not None:
            raise WriterFailed(self.error)

    def _run(self) -> None:
        batch: list[DocumentWrite] = []
        size = 0
        while True:
            try:
                item = self._queue.get(timeout=QUIET_S if batch else None)
            except queue.Empty:
                item = None
            if item is not None and item is not _END:
                batch.append(item)
                size += len(item.chunks)
                if size < EMBED_BATCH_CHUNKS:
                    continue
            if batch and not self._write(batch):
                _drain(self._queue)
                return
            batch, size = [], 0
            if item is _END:
                return

    def _write(self, batch: list[DocumentWrite]) -> bool:
        def done(write: DocumentWrite, stats: WriteStats) -> None:
            self.written(stats)
            log.info(
                "%s: indexed %s: %d chunks (embedded %d, reused %d, deleted %d)",
                self.collection.name,
                write.scope.sources[0] if write.scope.sources else "?",
                stats.written,
                stats.embedded,
                stats.reused,
                stats.deleted,
                extra={
                    "event": "indexed",
                    "collection": self.collection.name,
                    "chunks": stats.written,
                },
            )

        try:
            write_documents(self.collection, batch, on_done=done)
        except Exception as exc:
            self.error = exc
            return False
        return True


def _drain(waiting: queue.Queue[Any]) -> None:
    while True:
        try:
            waiting.get_nowait()
        except queue.Empty:
            return
