"""The knowledge-base admin surface as calls (`hub.kb`): what /v1/rag/* answers, for any caller
(HTTP, the CLI, an agent's tools). Each call names its collection as the request does (in the
body, or beside it as the query string's `collection`), resolves it once, and returns its declared
answer (rag_api.kbadmin.models); every write leaves its audit line."""

from __future__ import annotations

from typing import Any, TypeVar

from rag_api.access.grant import audit
from rag_api.catalog import Catalog
from rag_api.kbadmin import reads, writes
from rag_api.kbadmin.models import (
    AddChunks,
    AddDocument,
    Added,
    ChunkFilters,
    ChunkPage,
    Context,
    ContextBlock,
    ListChunks,
    Reload,
    Reloaded,
    Remove,
    Removed,
    Search,
    SearchResults,
    SourceList,
    Status,
    UpdateChunk,
    Updated,
    UpsertDocument,
    Upserted,
)
from rag_api.points.collection import Collection
from rag_api.routing import named, resolve
from rag_api.schema import Answer

A = TypeVar("A", bound=Answer)


class KbAdmin:
    def __init__(self, hub: Catalog) -> None:
        self.hub = hub

    def collection(self, in_body: str | None, in_query: str | None = None) -> Collection:
        """The collection named in the body or the query (they must agree), else the default."""
        return self.hub.collection(named(in_body, in_query))

    # --- reads

    def status(self, collection: str | None, indexer: dict[str, Any]) -> Status:
        """The collection's state; `indexer`: the folder watcher's row for it."""
        return reads.status(self.hub, self.collection(None, collection), indexer)

    def sources(self, collection: str | None) -> SourceList:
        return reads.sources(self.collection(None, collection))

    def chunks(
        self, request: ChunkFilters | ListChunks, collection: str | None = None
    ) -> ChunkPage:
        kb = self.collection(request.collection, collection)
        metadata = request.metadata if isinstance(request, ListChunks) else None
        return reads.list_chunks(kb, request, metadata)

    def search(self, request: Search, collection: str | None = None) -> SearchResults:
        """Passages for the query from the collection, or from where `auto` routes it."""
        target = resolve(self.hub, named(request.collection, collection), request.collections)
        return reads.search_results(self.hub, target, request)

    def context(self, request: Context, collection: str | None = None) -> ContextBlock:
        """The passages as one block for a prompt, from the collection or where `auto` routes."""
        target = resolve(self.hub, named(request.collection, collection), request.collections)
        return reads.context(self.hub, target, request)

    # --- writes (the caller checked the key may write)

    def update_chunk(self, request: UpdateChunk, collection: str | None = None) -> Updated:
        kb = self.collection(request.collection, collection)
        return _audited("chunks/update", kb, writes.update_chunk(kb, request))

    def upsert_document(self, request: UpsertDocument, collection: str | None = None) -> Upserted:
        kb = self.collection(request.collection, collection)
        return _audited("upsert/document", kb, writes.upsert_document(kb, request))

    def add_document(self, request: AddDocument, collection: str | None = None) -> Added:
        kb = self.collection(request.collection, collection)
        return _audited("add/document", kb, writes.add_document(kb, request))

    def add_chunks(self, request: AddChunks, collection: str | None = None) -> Added:
        kb = self.collection(request.collection, collection)
        return _audited("add/chunks", kb, writes.add_chunks(kb, request))

    def remove(self, request: Remove, collection: str | None = None) -> Removed:
        kb = self.collection(request.collection, collection)
        return _audited("remove", kb, writes.remove(kb, request))

    def reload(self, request: Reload, collection: str | None = None) -> Reloaded:
        kb = self.collection(request.collection, collection)
        return _audited("reload", kb, writes.reload(kb, request))


def _audited(action: str, kb: Collection, result: A) -> A:
    """The write's audit line (its counts and sources), then its answer."""
    fields = result.model_dump(exclude_unset=True)
    audit(action, kb.name, **{k: v for k, v in fields.items() if not isinstance(v, dict)})
    return result
