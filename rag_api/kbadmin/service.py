"""The knowledge-base admin surface as calls (`hub.kb`): what /v1/rag/* answers, for any caller
(HTTP, the CLI, an agent's tools). Each call names its collection as the request does (in the
body, or beside it as the query string's `collection`), resolves it once, and returns its declared
answer (rag_api.kbadmin.models); every write leaves its audit line."""

from __future__ import annotations

from collections.abc import Callable
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
    Prefetching,
    Reload,
    Reloaded,
    Remove,
    Removed,
    Routed,
    Search,
    SearchResults,
    SourceList,
    Status,
    UpdateChunk,
    Updated,
    UpsertDocument,
    Upserted,
)
from rag_api.kbadmin.prefetch import Prefetches
from rag_api.points.collection import Collection
from rag_api.routing import Target, named, resolve
from rag_api.schema import Answer

A = TypeVar("A", bound=Answer)
R = TypeVar("R", bound=Routed)
S = TypeVar("S", bound=Search)


class KbAdmin:
    def __init__(self, hub: Catalog) -> None:
        self.hub = hub
        self.prefetches = Prefetches(hub)

    def collection(self, in_body: str | None, in_query: str | None = None) -> Collection:
        """The collection named in the body or the query (they must agree), else the default."""
        return self.hub.collection(named(in_body, in_query))

    # --- reads

    def status(self, collection: str | None, watching: dict[str, Any]) -> Status:
        """The collection's state, with its row of the folder watcher's status `watching`."""
        kb = self.collection(None, collection)
        row = watching["collections"].get(kb.name) or {}
        return reads.status(self.hub, kb, {"running": watching["running"], **row})

    def sources(self, collection: str | None) -> SourceList:
        return reads.sources(self.collection(None, collection))

    def chunks(
        self, request: ChunkFilters | ListChunks, collection: str | None = None
    ) -> ChunkPage:
        kb = self.collection(request.collection, collection)
        metadata = request.metadata if isinstance(request, ListChunks) else None
        return reads.list_chunks(kb, request, metadata)

    def search(self, request: Search, collection: str | None = None) -> SearchResults | Prefetching:
        """Passages for the query from the collection, or from where `auto` routes it."""
        return self._read("search", reads.search_results, request, collection)

    def context(
        self, request: Context, collection: str | None = None
    ) -> ContextBlock | Prefetching:
        """The passages as one block for a prompt, from the collection or where `auto` routes."""
        return self._read("context", reads.context, request, collection)

    def _read(
        self,
        route: str,
        read: Callable[[Catalog, Target, S], A],
        request: S,
        collection: str | None,
    ) -> A | Prefetching:
        """`read` where the request points, or its prefetched answer; with `prefetch`, started
        in the background (rag_api.kbadmin.prefetch)."""
        target = resolve(self.hub, named(request.collection, collection), request.collections)
        if request.prefetch:
            self.prefetches.start(route, request, target, lambda: read(self.hub, target, request))
            return Prefetching(prefetching=True)
        kept = self.prefetches.answer(route, request, target)
        return kept if kept is not None else read(self.hub, target, request)

    def close(self) -> None:
        self.prefetches.close()

    # --- writes (the caller checked the key may write), each with its audit line

    def update_chunk(self, request: UpdateChunk, collection: str | None = None) -> Updated:
        return self._write("chunks/update", writes.update_chunk, request, collection)

    def upsert_document(self, request: UpsertDocument, collection: str | None = None) -> Upserted:
        return self._write("upsert/document", writes.upsert_document, request, collection)

    def add_document(self, request: AddDocument, collection: str | None = None) -> Added:
        return self._write("add/document", writes.add_document, request, collection)

    def add_chunks(self, request: AddChunks, collection: str | None = None) -> Added:
        return self._write("add/chunks", writes.add_chunks, request, collection)

    def remove(self, request: Remove, collection: str | None = None) -> Removed:
        return self._write("remove", writes.remove, request, collection)

    def reload(self, request: Reload, collection: str | None = None) -> Reloaded:
        return self._write("reload", writes.reload, request, collection)

    def _write(
        self, action: str, write: Callable[[Collection, R], A], request: R, collection: str | None
    ) -> A:
        """`write` on the collection the request names, then its audit line (counts, sources)."""
        kb = self.collection(request.collection, collection)
        result = write(kb, request)
        fields = result.model_dump(exclude_unset=True)
        audit(action, kb.name, **{k: v for k, v in fields.items() if not isinstance(v, dict)})
        return result
