"""One knowledge base: its configuration, its Qdrant collection, its embedder and its locks, the
gateway to its points (docs/architecture.md, "points")."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_api import payload
from rag_api.config import CollectionConfig, EmbedderConfig
from rag_api.embedding.bm25 import SparseEncoder, sparse_encoder
from rag_api.embedding.dims import offline_problem
from rag_api.embedding.embedders import Embedded, Embedders
from rag_api.errors import DimensionMismatch, EmbedderMismatch, ReaderReadOnly
from rag_api.llm.rerankers import Rerankers
from rag_api.points import generations
from rag_api.points.locks import ReadWriteLock
from rag_api.points.published import Published
from rag_api.points.repetition import Repetition
from rag_api.points.sequence import ChunkSequence
from rag_api.points.write_batch import Batch
from rag_api.store import (
    CollectionInfo,
    Hit,
    Layout,
    Record,
    SearchSpec,
    Selector,
    SparseVec,
    Store,
)

log = logging.getLogger("rag_api.points.collection")
INFO_TTL_S = 1.0  # another process (a migration on a server) may move the alias
# a reader's look-ups are renewed in the background (rag_api.replicas.pointers.Following); a
# request looks up itself only when the last one is older than this (the renewal stopped)
FOLLOWED_STALE_S = 2.0
EVERYTHING = Selector()


@dataclass(frozen=True)
class SearchTarget:
    """What a search reads, taken together: the stored collection and the embedder of its vectors
    (a migration switches both at once)."""

    info: CollectionInfo
    embedder: EmbedderConfig


class Collection:
    """A hub collection; every read and write of its points goes through here."""

    def __init__(
        self,
        name: str,
        cfg: CollectionConfig,
        kb_path: Path | None,
        store: Store,
        embedders: Embedders,
        rerankers: Rerankers,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.kb_path = kb_path
        self.store = store
        self.embedders = embedders
        self.rerankers = rerankers
        self._points_lock = ReadWriteLock()
        self._target_lock = ReadWriteLock()
        self.syncing = threading.RLock()  # one folder reconcile at a time (rag_api.indexing.sync)
        self.sequence = ChunkSequence(store)
        self.repetition = Repetition(store, self._points_lock)  # boilerplate by repetition
        self._info: tuple[float, CollectionInfo | None] | None = None
        self._info_lock = threading.Lock()
        self._switches = 0  # invalidations: a look-up begun before one is stale
        self._stored_embedder: tuple[str, str | None] | None = None
        self._indexed: str | None = None  # the physical collection whose indexes are checked
        # replicas (docs/scaling.md): a reader follows what the writer publishes; the writer
        # publishes after each write section
        self.follow: Callable[[str], Published | None] | None = None
        self.publish: Callable[[Collection], None] | None = None
        self.published: tuple[str, int] | None = None  # the version a reader last followed
        self.renewed = False  # a reader's look-ups renewed by a thread, not by its requests
        self._points_lock.after_write = self._written

    @property
    def sparse(self) -> SparseEncoder:
        return sparse_encoder(self.cfg.language, self.cfg.chunking.size)

    def sparse_of(self, raw: Mapping[str, Any]) -> SparseVec:
        """The BM25 vector of a stored chunk: its text with its document's title line."""
        stored = payload.StoredChunk(raw)
        return self.sparse.document(stored.text, stored.title)

    @property
    def embedder_id(self) -> str:
        return self.cfg.embedder.id

    def info(self, refresh: bool = False) -> CollectionInfo | None:
        """The Qdrant collection behind this name (None before the first write), cached briefly
        (a reader's renewed in the background while `renewed`)."""
        cached = self._info
        ttl = INFO_TTL_S
        if self.renewed:  # a collection the writer has not created yet: its first write is news
            ttl = FOLLOWED_STALE_S if cached is not None and cached[1] is not None else 0.0
        if refresh or cached is None or time.monotonic() - cached[0] > ttl:
            switches = self._switches
            cached = (time.monotonic(), self._look_up())
            with self._info_lock:  # a look-up that a switch overtook is not kept
                if self._switches == switches:
                    self._info = cached
        return cached[1]

    def _look_up(self) -> CollectionInfo | None:
        published = self.follow(self.name) if self.follow is not None else None
        if published is None:  # not a reader, or nothing published yet: the alias
            return self.store.info(self.name)
        embedder = published.followed(self.cfg.embedder)
        if embedder is not None:  # a migration or restore on the writer
            self.cfg = self.cfg.model_copy(update={"embedder": embedder})
            self._stored_embedder = None
            log.info("%s: follows the writer to %s (%dd)", self.name, embedder.id, embedder.dim)
        self.published = published.version
        return self.store.info_at(self.name, published.physical)

    def version(self) -> tuple:
        """Changes whenever what a search here reads may have changed: any write of its points,
        and a switch to another stored collection or configuration (each holds the points lock
        for writing); on a reader, any write the writer published (followed within INFO_TTL_S)."""
        if self.follow is not None:
            self.info()
        return (self.cfg, self._points_lock.writes, self.published)

    def _written(self) -> None:
        if self.publish is not None:
            self.publish(self)

    def _writes_here(self) -> None:
        """Refuse a write on a reader: its writes go to the writer (rag_api.http.forward)."""
        if self.follow is not None:
            raise ReaderReadOnly(
                f"'{self.name}' is written by the deployment's writer (RAG_WRITER_URL), "
                "not by this reader"
            )

    def invalidate(self) -> None:
        with self._info_lock:
            self._switches += 1
            self._info = None
        self._stored_embedder = None

    def searchable(self) -> SearchTarget | None:
        """What a search reads (None before the first write); a dimension mismatch or another
        model's vectors cannot be searched."""
        with self._points_lock.read():
            info = self.info()
            if info is None:
                return None
            if info.dim != self.cfg.embedder.dim:
                raise DimensionMismatch(self._dimension_message(info))
            self.ensure_indexes(info)
            self._same_embedder(info, "queries")  # another model's vectors: meaningless scores
            return SearchTarget(info, self.cfg.embedder)

    def writable(self) -> CollectionInfo:
        """The collection for a write, created on first use; refused when its vectors differ in
        dimension or model from collections.yaml (that needs `rag-hub migrate`)."""
        self._writes_here()
        info = self.info()
        if info is None:
            qdrant = self.cfg.qdrant
            layout = Layout(qdrant.shard_number, qdrant.replication_factor)
            info = self.store.ensure(self.name, self.cfg.embedder.dim, layout)
            self._info = (time.monotonic(), info)
        if info.dim != self.cfg.embedder.dim:
            raise DimensionMismatch(self._dimension_message(info))
        self.ensure_indexes(info)
        self._same_embedder(info, "writes")
        return info

    def _same_embedder(self, info: CollectionInfo, refused: str) -> None:
        stored = self.stored_embedder(info)
        if stored is not None and stored != self.embedder_id:
            raise EmbedderMismatch(
                f"collection '{self.name}' holds vectors of {stored} but collections.yaml configures "
                f"{self.embedder_id}; {refused} are refused until you {self.migrate_hint()} "
                "(or, if another process migrated it, restart with its collections.yaml)"
            )

    def ensure_indexes(self, info: CollectionInfo) -> None:
        """Index the metadata keys collections.yaml lists for filtering (once per process)."""
        wanted = self.cfg.retrieval.metadata_indexes
        if not wanted or self._indexed == info.physical or self.follow is not None:
            return  # (a reader: the writer indexes)
        fields = {payload.metadata_path(key): kind for key, kind in wanted.items()}
        # no collection lock: an index changes no point, and may be created while writes wait
        self.store.ensure_payload_indexes(info.physical, fields)
        self._indexed = info.physical

    def stored_embedder(self, info: CollectionInfo) -> str | None:
        """The embedder recorded in the collection's payloads (None when empty or foreign)."""
        cached = self._stored_embedder
        if cached is None or cached[0] != info.physical:
            records, _ = self.store.scroll(info.physical, Selector(), 1, fields=[payload.EMBEDDER])
            value = payload.StoredChunk(records[0].payload).embedder if records else None
            cached = (info.physical, value)
            if records:
                self._stored_embedder = cached
        return cached[1]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.embedders.documents(self.cfg.embedder, texts)

    def embed_each(self, texts: list[str]) -> Embedded:
        """Chunks' vectors for an index, each text's failure its own (Embedder.embed_each)."""
        return self.embedders.documents_each(self.cfg.embedder, texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.embedders.passages(self.cfg.embedder, texts)

    def embed_query(self, text: str, embedder: EmbedderConfig | None = None) -> np.ndarray:
        """The query's vector by `embedder` (the one read with the collection's info), else ours."""
        return self.embedders.query(embedder or self.cfg.embedder, text)

    def _dimension_message(self, info: CollectionInfo) -> str:
        return (
            f"collection '{self.name}' stores {info.dim}-dimensional vectors but collections.yaml "
            f"configures {self.cfg.embedder.dim} ({self.embedder_id}); "
            f"{self.migrate_hint()}"
        )

    def migrate_hint(self) -> str:
        """What to do to move this collection to the configured embedder: run the migration, or
        first correct an embedder its model cannot be (never a command that would fail)."""
        e = self.cfg.embedder
        problem = offline_problem(e)
        if problem is not None:
            return f"correct collections.yaml first ({problem})"
        command = (
            f"rag-hub migrate {self.name} --provider {e.provider} --model {e.model} --dim {e.dim}"
        )
        return f"run `{command}` to re-embed it"

    # --- reads -----------------------------------------------------------------------------------

    def search(
        self,
        target: SearchTarget,
        spec: SearchSpec,
        keep: Callable[[list[Hit]], list[Hit]] | None = None,
    ) -> list[Hit]:
        """Hits of one search in the collection `searchable` returned. With `keep` (a search that
        read only some payload fields to rank its hits), the hits `keep` chooses come back with
        their full payloads, read in the same state as the search: a write between two reads could
        leave a kept chunk deleted, or moved to another source, and its document missing."""
        physical = target.info.physical
        with self._points_lock.read():
            hits = self.store.search(physical, spec, target.info)
            if keep is None:
                return self._one_generation(hits)
            kept = keep(hits)
            records = self.store.retrieve(physical, [hit.id for hit in kept])
        stored = {record.id: record.payload for record in records}
        for hit in kept:
            hit.payload = stored.get(hit.id, {})
        return self._one_generation([hit for hit in kept if hit.id in stored])

    def _one_generation(self, hits: list[Hit]) -> list[Hit]:
        """In-process, the points lock keeps a replacement's two operations from a search; a
        reader, in another process, drops the older generation of a document it finds both of."""
        return generations.newest(hits) if self.follow is not None else hits

    def count(self, selector: Selector = EVERYTHING) -> int:
        """How many points the selector selects (0 before the first write)."""
        info = self.info()
        if info is None:
            return 0
        with self._points_lock.read():
            return self.store.count(info.physical, selector)

    def sources(self, selector: Selector = EVERYTHING) -> dict[str, int]:
        """Chunk count per source."""
        info = self.info()
        if info is None:
            return {}
        with self._points_lock.read():
            return self.store.sources(info.physical, selector)

    def records(
        self,
        selector: Selector,
        fields: Sequence[str] | None = None,
        limit: int | None = None,
        dense: bool = False,
    ) -> list[Record]:
        """The selected points (the first `limit` of them in id order), read in one piece;
        `dense` with a `limit` reads their vectors too."""
        info = self.info()
        if info is None:
            return []
        with self._points_lock.read():
            if limit is not None:
                page = self.store.scroll(info.physical, selector, limit, None, dense, fields)
                return page[0]
            return list(self.store.iter_records(info.physical, selector, fields=fields))

    def retrieve(self, ids: Sequence[str], with_dense: bool = False) -> list[Record]:
        """Points by id (missing ids are skipped)."""
        info = self.info()
        if info is None:
            return []
        with self._points_lock.read():
            return self.store.retrieve(info.physical, ids, with_dense)

    def page(self, selector: Selector, offset: int, limit: int) -> tuple[int, list[Record]]:
        """How many points are selected, and a page of them in chunk-number order."""
        info = self.info()
        if info is None:
            return 0, []
        fields = payload.POSITION_FIELDS
        with self._points_lock.read():  # order and page from one state: no half replacement
            order = list(self.store.iter_records(info.physical, selector, fields=fields))
            order.sort(key=lambda r: payload.StoredChunk(r.payload).position())
            wanted = [r.id for r in order[offset : offset + limit]]
            found = {r.id: r for r in self.store.retrieve(info.physical, wanted)}
        return len(order), [found[pid] for pid in wanted if pid in found]

    def scan(
        self,
        selector: Selector = EVERYTHING,
        fields: Sequence[str] | None = None,
        with_dense: bool = False,
    ) -> Iterator[Record]:
        """Every selected point, streamed without a lock: for passes over a whole collection
        that tolerate concurrent writes (sync's inventory, the integrity check)."""
        info = self.info()
        if info is not None:
            yield from self.store.iter_records(info.physical, selector, with_dense, fields)

    # --- writes ----------------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[Batch]:
        """Writes that land in one physical collection, created on first use; a migration's
        alias swap waits for the batch to end (or the batch for the swap)."""
        with self._target_lock.read():
            physical = self.writable().physical
            parts = (self._points_lock, self.sequence, self.repetition, self.cfg.language)
            yield Batch(self.store, *parts, physical)

    def delete(self, selector: Selector, retire: bool = False) -> int:
        """Delete the selected points; returns how many there were. `retire`: their chunk
        numbers are never handed out again in this process."""
        self._writes_here()
        with self._target_lock.read():
            info = self.info()
            if info is None:
                return 0
            if retire:
                self.sequence.prime(info.physical)  # the first write's scan, readers not held
            with self._points_lock.write():
                records = None
                if retire or self.repetition.primed(info.physical):
                    records = list(
                        self.store.iter_records(info.physical, selector, fields=[payload.SEQ])
                    )
                if retire:
                    numbers = (payload.StoredChunk(r.payload).seq for r in records or [])
                    self.sequence.retire(info.physical, [n for n in numbers if n is not None])
                count = self.store.count(info.physical, selector)
                if count:
                    self.store.delete(info.physical, selector)
                if records:
                    removed = [r.id for r in records]
                    self.repetition.written(info.physical, self.cfg.language, removed, [])
        return count

    def allocate(self, count: int) -> list[int]:
        """`count` fresh chunk numbers (rag_api.points.sequence)."""
        return self.sequence.allocate(self.writable().physical, count)

    def optimize(self) -> None:
        """Build indexes after a bulk load. Searches and writes go on meanwhile (the embedded
        engine builds them on a copy that replaces the shard, its writes replayed onto it); the
        writes are held only while the shard is copied and when the copy takes its place (a
        backup's copy waits for those steps, and they for it); a migration cancels the build."""
        self._writes_here()
        info = self.info(refresh=True)
        if info is not None:
            self.store.optimize(info.physical, self.writes_held)

    # --- migration -------------------------------------------------------------------------------

    @contextmanager
    def writes_held(self) -> Iterator[None]:
        """Hold every in-process write (they wait) until the block ends: a migration's last
        catch-up and alias swap."""
        with self._target_lock.write():
            yield

    def recover(self) -> list[generations.Torn]:
        """Complete the replacements a crash cut short: keep each torn document's newest
        generation (rag_api.points.generations)."""
        self._writes_here()
        info = self.info(refresh=True)
        if info is None:
            return []
        with self._target_lock.read(), self._points_lock.write():
            torn = generations.keep_newest(self.store, info.physical)
        for document in torn:
            log.warning("%s: %s; kept the newest", self.name, document.describe())
        return torn

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold every in-process reader and writer until the block ends: a store rebuild."""
        with self._target_lock.write(), self._points_lock.write():
            yield

    def switch(self, cfg: CollectionConfig, physical: str | None) -> None:
        """Point the alias at `physical` (None: leave it) and adopt `cfg` together; searches wait."""
        self._writes_here()
        with self._points_lock.write():
            if physical is not None:
                self.store.set_alias(self.name, physical)
            self.cfg = cfg
            self.invalidate()
