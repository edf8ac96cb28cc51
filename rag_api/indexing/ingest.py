"""Chunks -> points: hash-skip unchanged chunks, embed the rest in batches, replace atomically."""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_api import payload
from rag_api.embedding.embedders import Embedded
from rag_api.errors import EmbedderUnavailable
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.text_facts import TextFacts, document_titles
from rag_api.points.collection import Collection
from rag_api.points.labels import BOILERPLATE_SHARE, Label, label
from rag_api.points.repetition import Census, unit_of
from rag_api.points.write_batch import Batch
from rag_api.store import PointData, Record, Selector

log = logging.getLogger("rag_api.indexing.ingest")
REUSE_FIELDS = [payload.EMBEDDER, payload.CONTENT_HASH]
NotWritten = Callable[["DocumentWrite", str], None]  # a document not written, and why


@dataclass
class WriteStats:
    embedded: int = 0
    reused: int = 0
    deleted: int = 0
    written: int = 0

    def add(self, other: WriteStats) -> None:
        self.embedded += other.embedded
        self.reused += other.reused
        self.deleted += other.deleted
        self.written += other.written


def content_hash(text: str, prefix: str = "") -> str:
    """Identity of what gets embedded: equal hash, equal vector."""
    return hashlib.sha256((prefix + text).encode()).hexdigest()[:32]


@dataclass
class DocumentWrite:
    """Make the points selected by `scope` be exactly `chunks` (an empty list deletes them).

    Prepared first (payloads built and checked, existing vectors reused by content hash, only new
    texts embedded), then committed as one replacement of the scope (Batch.replace): a scope by
    source or file (not by ids) is a whole document, replaced by a new generation of it, so a
    crash between the overwrite and the drop is completed at the next open (rag_api.points.generations).
    """

    collection: Collection
    scope: Selector
    chunks: list[Chunk]
    provenance: dict[str, Any] = field(default_factory=dict)  # who writes (rag_api.payload)
    reuse_from: Selector | None = None  # more points whose vectors may be reused (a renamed file)
    seqs: list[int] | None = None  # chunk numbers chosen by the caller (else kept or allocated)
    reembed: bool = False  # embed every chunk anew, ignoring stored vectors (a forced rebuild)
    facts: TextFacts | None = None  # worked out where the chunks were read (else here)
    hashes: list[str] = field(init=False, default_factory=list)
    payloads: list[dict[str, Any]] = field(init=False, default_factory=list)
    vectors: dict[str, np.ndarray | list[float]] = field(init=False, default_factory=dict)
    reused: int = field(init=False, default=0)

    def prepare(self, batch: Batch, stored: Iterable[Record] | None = None) -> list[str]:
        """Build the payloads, load reusable vectors (from `stored`, the scope's points with
        their vectors, when read already: prepare_all); return the texts that still need
        embedding (deduplicated)."""
        coll = self.collection
        prefix = coll.cfg.embedder.document_prefix
        self.hashes = [content_hash(c.text, prefix) for c in self.chunks]
        titles = document_titles(self.chunks)
        census = batch.census() if self.chunks else None
        facts = self._facts()
        known = facts.labels if facts is not None else [None] * len(self.chunks)
        self.payloads = [
            payload.build(
                self.provenance,
                text=chunk.text,
                source=chunk.source,
                chunk_index=chunk.chunk_index,
                metadata=chunk.metadata,
                content_hash=digest,
                embedder=coll.embedder_id,
                title=titles.get(chunk.source),
                labels=chunk_label(chunk, coll.cfg.language, census, alone).payload(),
            )
            for chunk, digest, alone in zip(self.chunks, self.hashes, known, strict=True)
        ]
        if self.reuses:
            if stored is None:
                stored = batch.records(self.scope, REUSE_FIELDS, with_dense=True)
            if self.reuse_from is not None:
                more = batch.records(self.reuse_from, REUSE_FIELDS, with_dense=True)
                stored = itertools.chain(stored, more)
            for record in stored:
                chunk = payload.StoredChunk(record.payload)
                digest = chunk.content_hash
                if record.dense is not None and digest and chunk.embedder == coll.embedder_id:
                    self.vectors.setdefault(digest, record.dense)
        self.reused = sum(1 for digest in self.hashes if digest in self.vectors)
        missing: dict[str, str] = {}
        for chunk, digest in zip(self.chunks, self.hashes, strict=True):
            if digest not in self.vectors:
                missing.setdefault(digest, chunk.text)
        return list(missing.values())

    @property
    def reuses(self) -> bool:
        """Whether stored vectors are looked up for its chunks."""
        return bool(self.chunks) and not self.reembed

    def accept(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        prefix = self.collection.cfg.embedder.document_prefix
        for text, vector in zip(texts, vectors, strict=True):
            self.vectors[content_hash(text, prefix)] = vector

    def points(self) -> list[PointData]:
        """Its chunks as points, once every vector is there (accept)."""
        coll = self.collection
        facts = self._facts()
        sparse = (
            facts.sparse
            if facts is not None
            else coll.sparse.documents(
                [c.text for c in self.chunks], [p.get(payload.TITLE) for p in self.payloads]
            )
        )
        ids = [payload.point_id(coll.name, c.source, c.chunk_index) for c in self.chunks]
        return [
            PointData(pid, self.vectors[digest], body, sv)
            for pid, body, digest, sv in zip(ids, self.payloads, self.hashes, sparse, strict=True)
        ]

    def stats(self, deleted: int) -> WriteStats:
        """What its commit did, `deleted` points of the scope left over."""
        written = len(self.chunks)
        return WriteStats(written - self.reused, self.reused, deleted, written)

    def _facts(self) -> TextFacts | None:
        """The text facts given with the chunks, if they are the ones this collection reads."""
        cfg = self.collection.cfg
        if self.facts is None or not self.facts.fit(self.chunks, cfg.language, cfg.chunking.size):
            return None
        return self.facts


def chunk_label(
    chunk: Chunk, language: str, census: Census | None, alone: Label | None = None
) -> Label:
    """A chunk's labels as it is written (`alone`: its labels with nothing repeated, worked out
    before); a write that carries a line across the repetition threshold relabels the points
    holding it once committed (rag_api.points.repetition)."""
    unit = unit_of(chunk.source, chunk.metadata)
    repeated = census.repeated(chunk.text, unit) if census is not None else 0.0
    if alone is not None and repeated < BOILERPLATE_SHARE:
        return alone  # the share counts only once it reaches the threshold (labels.label)
    return label(chunk.text, language, chunk.metadata, repeated)


def write_documents(
    collection: Collection,
    writes: Sequence[DocumentWrite],
    on_done: Callable[[DocumentWrite, WriteStats], None] | None = None,
    on_failed: NotWritten | None = None,
) -> WriteStats:
    """Apply several document writes, embedding all their new chunks in shared batches.

    A document is written once all its vectors are ready; one whose vectors could not be made
    is left as it was and reported to `on_failed` (without it: EmbedderUnavailable, once the
    others are written), and a server that stopped answering raises EmbedderUnavailable.
    """
    with collection.batch() as batch:  # a migration's alias swap waits for it, or it for the swap
        texts = prepare_all(batch, writes)
        embedded = embed_each(collection, [t for own in texts for t in own])
        failures: list[str] = []

        def failed(write: DocumentWrite, reason: str) -> None:
            failures.append(reason)

        total = commit_group(batch, writes, texts, embedded, on_done, on_failed or failed)
    if embedded.down or failures:
        raise EmbedderUnavailable(collection.embedder_id, embedded.down or failures[0])
    return total


def log_written(
    logger: logging.Logger, collection: Collection, name: str, stats: WriteStats, **extra: Any
) -> None:
    """The `indexed` event of a document written (a folder's file, a source's document): its
    chunks, how many were embedded, reused and deleted; `extra` adds to the record's fields."""
    logger.info(
        "%s: indexed %s: %d chunks (embedded %d, reused %d, deleted %d)",
        collection.name,
        name,
        stats.written,
        stats.embedded,
        stats.reused,
        stats.deleted,
        extra={"event": "indexed", "collection": collection.name, "chunks": stats.written, **extra},
    )


def prepare_all(batch: Batch, writes: Sequence[DocumentWrite]) -> list[list[str]]:
    """Prepare each write (DocumentWrite.prepare), the stored points of whole documents read in
    one piece (Batch.records_each): each write's texts to embed."""
    looking = [write.scope for write in writes if write.reuses]
    found = batch.records_each(looking, REUSE_FIELDS, with_dense=True)
    if found is None:
        return [write.prepare(batch) for write in writes]
    stored = iter(found)  # in the order of the writes that look
    return [write.prepare(batch, next(stored) if write.reuses else None) for write in writes]


def commit_group(
    batch: Batch,
    writes: Sequence[DocumentWrite],
    texts: Sequence[list[str]],
    embedded: Embedded,
    on_done: Callable[[DocumentWrite, WriteStats], None] | None,
    on_failed: NotWritten,
) -> WriteStats:
    """Write the documents whose texts (`texts`, in order, as `embedded` holds them) all have
    their vectors, in one replacement (Batch.replace_each); report each other one to
    `on_failed` with why."""
    ready: list[DocumentWrite] = []
    start = 0
    for write, own in zip(writes, texts, strict=True):
        span = range(start, start + len(own))
        start += len(own)
        reasons = [embedded.failed[at] for at in span if at in embedded.failed]
        if reasons:
            on_failed(write, f"not embedded: {reasons[0]}")
            continue
        write.accept(own, embedded.vectors[span.start : span.stop])
        ready.append(write)
    deleted = batch.replace_each([(w.scope, w.points(), w.seqs) for w in ready]) if ready else []
    total = WriteStats()
    for write, gone in zip(ready, deleted, strict=True):
        stats = write.stats(gone)
        total.add(stats)
        if on_done is not None:
            on_done(write, stats)
    return total


def embed_each(collection: Collection, texts: list[str]) -> Embedded:
    """Document embeddings of `texts` for an index, each text's failure its own where the model
    can tell; the vectors that came are checked for shape (else EmbedderUnavailable)."""
    dim = collection.cfg.embedder.dim
    if not texts:
        return Embedded(np.zeros((0, dim), dtype=np.float32))
    try:
        embedded = collection.embed_each(texts)
    except EmbedderUnavailable:
        raise
    except Exception as exc:
        raise EmbedderUnavailable(collection.embedder_id, str(exc)) from exc
    shape = embedded.vectors.shape
    if len(embedded.failed) < len(texts) and shape != (len(texts), dim):
        raise EmbedderUnavailable(
            collection.embedder_id,
            f"returned vectors of shape {shape}, expected ({len(texts)}, {dim})",
        )
    return embedded


def embed_texts(collection: Collection, texts: list[str]) -> np.ndarray:
    """Document embeddings of `texts`, checked for shape; any failure is EmbedderUnavailable."""
    embedded = embed_each(collection, texts)
    if embedded.down or embedded.failed:
        reason = embedded.down or next(iter(embedded.failed.values()))
        raise EmbedderUnavailable(collection.embedder_id, reason)
    return embedded.vectors
