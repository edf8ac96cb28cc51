"""Documents read -> the store, in stages that overlap: while one group of documents is being
embedded, the next is labelled and the one before is written, and the reader (the folder's
scan, a source's listing) reads on. A sync then takes about as long as its slowest stage, not
the sum of them.

    reader --put()--> [inbox] -> label -> [groups] -> embed --> [inbox] -> write

Labelling and writing are pure Python and share one thread (threads that compute take turns on
the interpreter, and more of them on more cores only add the handing over: docs/performance.md);
embedding, a server's requests in flight or a model's native code, has its own (two for a
server: a group's first requests go out beside the last of the one before). The labelling
thread takes what comes to its inbox in order: documents, grouped and labelled, and groups back
from the embedding, written. A group is written as its documents' vectors come
(ingest.commit_group): a document whose vectors could not be made is reported and left as it
was. At most WAITING documents wait (the reader pauses beyond) and one group waits to be
embedded (beside the one or two being embedded), so memory stays flat however many documents
come. A group takes the collection's write batch from its labelling to its writing (a
migration's alias swap waits for it). A failure stops what follows: the reader's next `put`
raises PipelineFailed, `finish` the failure itself; what was written stays. A server that
stopped answering (Embedded.down) stops it too, once the documents embedded before are written.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from rag_api.embedding.embedders import Embedded
from rag_api.errors import EmbedderUnavailable
from rag_api.indexing.ingest import (
    DocumentWrite,
    NotWritten,
    WriteStats,
    commit_group,
    embed_each,
    prepare_all,
)
from rag_api.indexing.throughput import Throughput
from rag_api.points.collection import Collection
from rag_api.points.write_batch import Batch

log = logging.getLogger("rag_api.indexing.pipeline")
Done = Callable[[DocumentWrite, WriteStats], None]
# chunks a group of documents holds (embedded in one call, written in one replacement): smaller
# groups keep the stages busier at a sync's start and end, larger ones pad a model's calls less
# (docs/performance.md, bench_ingest)
GROUP_CHUNKS = 512
WAITING = 64  # documents read and waiting to be labelled: the reader pauses beyond
QUIET_S = 0.05  # a group goes on once nothing more came for this long (a slow reader)
_END = object()  # the reader is done
_EMBEDDED = object()  # the embedding is done: every group came back


class PipelineFailed(Exception):
    """A stage failed: the reader stops; `finish` raises the failure."""


@dataclass
class _Group:
    writes: list[DocumentWrite]
    held: ExitStack  # the collection's write batch, from the labelling to the writing
    batch: Batch
    texts: list[list[str]] = field(default_factory=list)  # each write's texts to embed
    embedded: Embedded | None = None


class Pipeline:
    """`put` documents from one reading thread, then `finish`."""

    def __init__(
        self,
        collection: Collection,
        on_done: Done,
        on_failed: NotWritten,
        throughput: Throughput | None = None,
    ) -> None:
        self.collection = collection
        self.on_done = on_done
        self.on_failed = on_failed
        self.throughput = throughput or Throughput()
        self.error: BaseException | None = None
        # documents (WAITING at most, `_room`) and embedded groups, for the labelling thread
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._room = threading.Semaphore(WAITING)
        self._embedding: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._free = 0.0  # when the embedding stage last finished a group (monotonic)
        self._threads = [
            threading.Thread(target=stage, name=f"rag-ingest-{name}", daemon=True)
            for name, stage in (("label", self._label_and_write), ("embed", self._embed))
        ]
        for thread in self._threads:
            thread.start()

    def put(self, write: DocumentWrite) -> None:
        if self.error is not None:
            raise PipelineFailed(str(self.error))
        self._room.acquire()
        self._inbox.put(write)

    def finish(self) -> None:
        """Write what is left and wait for it; the first failure raised."""
        self._inbox.put(_END)
        for thread in self._threads:
            thread.join()
        if self.error is not None:
            raise self.error

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finish()
        else:  # the reader failed: what was read is still written, the reader's error raised
            try:
                self.finish()
            except Exception:
                log.exception("%s: writing what was read", self.collection.name)

    # --- the stages: labelling and writing on one thread, embedding on another -------------------

    def _label_and_write(self) -> None:
        writes: list[DocumentWrite] = []
        size = 0
        broken = False  # a write failed: nothing more is written
        while True:
            try:
                item = self._inbox.get(timeout=QUIET_S if writes else None)
            except queue.Empty:
                item = None
            if isinstance(item, _Group):
                broken = self._write(item, broken)
                continue
            if item is _EMBEDDED:
                return
            if isinstance(item, DocumentWrite):
                self._room.release()
                writes.append(item)
                size += len(item.chunks)
                if size < GROUP_CHUNKS:
                    continue
            if writes and self.error is None:
                self._guarded(self._group, writes)
            writes, size = [], 0
            if item is _END:
                self._embedding.put(_END)

    def _group(self, writes: list[DocumentWrite]) -> None:
        held = ExitStack()
        try:
            batch = held.enter_context(self.collection.batch())
            group = _Group(writes, held, batch)
            group.texts = prepare_all(batch, writes)
        except BaseException:
            held.close()
            raise
        self._embedding.put(group)

    def _embed(self) -> None:
        """Embed the groups, as many at once as the model takes (Embedder.calls_at_once: a
        server's requests of two groups overlap), each handed on in its turn."""
        at_once = self._calls_at_once()
        before: Future[None] | None = None  # the group before: a group goes on after it
        room = threading.Semaphore(at_once)  # no group waits in the pool behind a waiting one
        with ThreadPoolExecutor(at_once, thread_name_prefix="rag-ingest-embed") as pool:
            while (group := self._embedding.get()) is not _END:
                room.acquire()
                before = pool.submit(self._embed_group, group, before, room)
        self._inbox.put(_EMBEDDED)  # after every group went on (the pool's shutdown waits)

    def _embed_group(
        self, group: _Group, before: Future[None] | None, room: threading.Semaphore
    ) -> None:
        try:
            started, embedded, failure = time.monotonic(), None, None
            if self.error is None:
                try:
                    embedded = embed_each(self.collection, [t for own in group.texts for t in own])
                except BaseException as exc:
                    failure = exc
            finished = time.monotonic()
            if before is not None:
                before.result()  # its turn: the group before went on (or was dropped)
            if failure is not None:
                self._failed(failure)
            if embedded is None or self.error is not None:
                group.held.close()  # a failure stops what follows
                return
            group.embedded = embedded
            # the stage's own time: the part of this group's that no group before it spent
            self.throughput.embedded(embedded, max(0.0, finished - max(started, self._free)))
            self._free = max(self._free, finished)
            self._inbox.put(group)  # written even when the server went down meanwhile
            if embedded.down is not None:
                self._failed(EmbedderUnavailable(self.collection.embedder_id, embedded.down))
        except BaseException as exc:  # the stage's own failure, not the model's
            group.held.close()
            self._failed(exc)
        finally:
            room.release()

    def _calls_at_once(self) -> int:
        try:
            return self.collection.embedders.get(self.collection.cfg.embedder).calls_at_once
        except Exception:  # a model that cannot load: the first group's embedding says why
            return 1

    def _write(self, group: _Group, broken: bool) -> bool:
        """Write an embedded group (unless a write failed before); whether writing is broken."""
        with group.held:
            if broken:
                return True
            try:
                commit_group(
                    group.batch,
                    group.writes,
                    group.texts,
                    group.embedded,
                    self._done,
                    self.on_failed,
                )
            except BaseException as exc:
                self._failed(exc)
                return True
        return False

    def _done(self, write: DocumentWrite, stats: WriteStats) -> None:
        self.throughput.written(stats.written)  # first: what on_done shows counts it
        self.on_done(write, stats)

    def _guarded(self, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except BaseException as exc:
            self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
