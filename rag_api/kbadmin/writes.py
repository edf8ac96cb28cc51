"""Live edits of a collection: add, upsert, update one chunk, remove, reload from the kb folder.

Every write goes through rag_api.indexing.ingest (prepare, embed, then commit under the collection's write
lock), so a concurrent search sees the old version or the new one, and an embedder failure
leaves the store untouched.
"""

from __future__ import annotations

import logging
from typing import Any

from rag_api.catalog import Catalog
from rag_api.errors import ChunkNotFound, InvalidRequest, PayloadTooLarge, RagError
from rag_api.indexing.chunking import Chunk, split_text
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.indexing.sync import sync_collection
from rag_api.kbadmin.chunks import (
    DYNAMIC_BASE,
    TEMPORARY,
    chunk_view,
    find_chunk,
)
from rag_api.kbadmin.models import (
    CHUNK_MAX_CHARS,
    DOCUMENT_MAX_CHARS,
    ITEMS_MAX,
    AddChunks,
    AddDocument,
    Added,
    Reload,
    Reloaded,
    Remove,
    Removed,
    UpdateChunk,
    Updated,
    UpsertDocument,
    Upserted,
    check_size,
)
from rag_api.payload import (
    FROM_API,
    StoredChunk,
    api_provenance,
    edited_provenance,
    point_id,
)
from rag_api.points.collection import Collection
from rag_api.store import Selector

log = logging.getLogger("rag_api.kbadmin")
# an edited file chunk's doc_hash: never a file's hash, so the next reconcile restores the file
EDITED = "edited-through-api"


class ChunkExists(RagError):
    code = "CHUNK_EXISTS"
    status = 409


def add_document(collection: Collection, body: AddDocument) -> Added:
    """Insert a free text, chunked with the collection's chunking; never replaces anything."""
    check_size("text", body.text, DOCUMENT_MAX_CHARS)
    texts = split_text(body.text, collection.cfg.chunking)
    if not texts:
        raise InvalidRequest("text: must not be empty (use /upsert/document to delete)")
    seqs = collection.allocate(len(texts))
    source = body.source or f"dynamic#{seqs[0]}"
    chunks = [
        _chunk(collection, text, source, seq, body.metadata)
        for text, seq in zip(texts, seqs, strict=True)
    ]
    _insert(collection, chunks, seqs, api_provenance(body.persist, body.dynamic))
    return Added(added=len(chunks), sources=[source], total_after=_total(collection))


def add_chunks(collection: Collection, body: AddChunks) -> Added:
    """Insert pre-chunked items as they are (no splitting)."""
    if len(body.items) > ITEMS_MAX:
        raise PayloadTooLarge(f"{len(body.items)} items; the limit per request is {ITEMS_MAX}")
    for n, item in enumerate(body.items):
        check_size(f"items[{n}].text", item.text, CHUNK_MAX_CHARS)
        if not item.text.strip():
            raise InvalidRequest(f"items.{n}.text: must not be blank")
    seqs = collection.allocate(len(body.items))
    chunks = [
        _chunk(collection, item.text, item.source, seq, item.metadata)
        for item, seq in zip(body.items, seqs, strict=True)
    ]
    _insert(collection, chunks, seqs, api_provenance(body.persist, body.dynamic))
    sources = list(dict.fromkeys(c.source for c in chunks))
    return Added(added=len(chunks), sources=sources, total_after=_total(collection))


def upsert_document(collection: Collection, body: UpsertDocument) -> Upserted:
    """Atomically make the source's API chunks exactly the new text's chunks ("" deletes them).

    kb-file chunks that happen to carry the same source are the folder's: left alone.
    """
    check_size("text", body.text, DOCUMENT_MAX_CHARS)
    texts = split_text(body.text, collection.cfg.chunking)
    seqs = collection.allocate(len(texts))
    chunks = [
        _chunk(collection, text, body.source, seq, body.metadata)
        for text, seq in zip(texts, seqs, strict=True)
    ]
    scope = Selector(sources=(body.source,), origin=FROM_API)
    provenance = api_provenance(body.persist, body.dynamic)
    write = DocumentWrite(collection, scope, chunks, provenance, seqs=seqs)
    stats = write_documents(collection, [write])
    return Upserted(
        removed=stats.deleted,
        added=stats.written,
        sources=[body.source],
        total_after=_total(collection),
        mode="upsert",
    )


def update_chunk(collection: Collection, body: UpdateChunk) -> Updated:
    """Change one chunk's text (re-embedded), metadata (replaced) or source, atomically.

    It keeps its index and chunk_index. A kb-file chunk can be edited too; its file stays the
    source of truth: the next reconcile of that file (/reload, the watcher) restores it.
    """
    if collection.info() is None:
        raise ChunkNotFound(f"collection '{collection.name}' is empty: no chunk to update")
    record = find_chunk(collection, body.index, body.source, body.chunk_index)
    old = StoredChunk(record.payload)
    chunk = Chunk(
        text=body.new_text if body.new_text is not None else old.text,
        source=body.new_source if body.new_source is not None else old.source,
        chunk_index=old.chunk_index or 0,
        metadata=body.new_metadata if body.new_metadata is not None else old.metadata,
    )
    check_size("new_text", chunk.text, CHUNK_MAX_CHARS)
    if body.new_source is not None:
        _outside_the_sources(collection, body.new_source)
    new_id = point_id(collection.name, chunk.source, chunk.chunk_index)
    if new_id != record.id and collection.retrieve([new_id]):
        raise ChunkExists(
            f"source '{chunk.source}' already has a chunk_index {chunk.chunk_index}; "
            "remove it first or move this chunk to another source"
        )
    write = DocumentWrite(
        collection,
        Selector(ids=(record.id,)),
        [chunk],
        edited_provenance(record.payload, EDITED),
        seqs=[old.seq] if old.seq is not None else None,
    )
    write_documents(collection, [write])
    updated = collection.retrieve([new_id])
    if not updated:  # removed by a concurrent call in the meantime
        raise ChunkNotFound(f"the chunk was removed while it was being updated ({new_id})")
    chunk_now = chunk_view(collection.name, StoredChunk(updated[0].payload), None, True)
    return Updated(updated=1, chunk=chunk_now)


def remove(collection: Collection, body: Remove) -> Removed:
    """Delete every chunk whose source is `source_prefix` (exact) or starts with it."""
    if body.exact:
        selector = Selector(sources=(body.source_prefix,))
    else:
        selector = Selector(source_prefix=body.source_prefix)
    removed = collection.delete(selector)
    return Removed(removed=removed, total_after=_total(collection))


def reload(collection: Collection, body: Reload) -> Reloaded:
    """Reconcile with the kb folder (force: re-embed every file; prune: apply a mass removal)
    and drop temporary API chunks.

    Persistent API chunks stay: Qdrant holds them durably. A refused sync (kb folder missing,
    mass removal held) comes first, so it leaves the temporary chunks too.
    """
    report = sync_collection(collection, force=body.force_rebuild, prune=body.prune)
    temporary = collection.delete(TEMPORARY)
    return Reloaded(
        **report.as_dict(),
        force_rebuild=body.force_rebuild,
        temporary_removed=temporary,
        total_after=_total(collection),
    )


def drop_temporary(hub: Catalog) -> int:
    """At start-up: delete every collection's `persist: false` chunks (they lived one run).

    Their numbers are retired first, so a listing taken before the restart cannot name a new
    chunk with an old `index` (the counter restarts after the largest stored number).
    """
    dropped = 0
    for collection in hub.collections.values():
        try:
            count = collection.delete(TEMPORARY, retire=True)
        except RagError as exc:
            log.warning("%s: temporary chunks not dropped: %s", collection.name, exc.message)
            continue
        if count:
            log.info("%s: dropped %d temporary API chunks", collection.name, count)
        dropped += count
    return dropped


def _chunk(
    collection: Collection, text: str, source: str | None, seq: int, metadata: dict[str, Any]
) -> Chunk:
    """A new API chunk: chunk_index DYNAMIC_BASE + its index; no source: dynamic#<index>."""
    if source is not None:
        _outside_the_sources(collection, source)
    return Chunk(text, source or f"dynamic#{seq}", DYNAMIC_BASE + seq, dict(metadata))


def _outside_the_sources(collection: Collection, source: str) -> None:
    """Refuse an API document named as one of the collection's sources names its documents
    (`name:key`): that source's sync writes it, and the two would overwrite each other."""
    for block in collection.cfg.sources:
        if source.startswith(f"{block.name}:"):
            raise InvalidRequest(
                f"source: '{source}' names a document of the collection's source "
                f"'{block.name}' (its sync writes those): choose a name outside '{block.name}:'",
                param="source",
            )


def _insert(
    collection: Collection, chunks: list[Chunk], seqs: list[int], provenance: dict[str, Any]
) -> None:
    ids = tuple(point_id(collection.name, c.source, c.chunk_index) for c in chunks)
    # identical texts already stored under these sources lend their vectors
    reuse = Selector(sources=tuple({c.source for c in chunks}))
    write = DocumentWrite(collection, Selector(ids=ids), chunks, provenance, reuse, seqs=seqs)
    write_documents(collection, [write])


def _total(collection: Collection) -> int:
    collection.info(refresh=True)  # another process may have created or moved it
    return collection.count()
