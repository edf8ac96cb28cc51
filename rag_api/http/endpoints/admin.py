"""/v1/rag/*: the voice pipeline's knowledge-base admin API (logic in rag_api.kbadmin).

Reads accept RAG_API_KEY or RAG_ADMIN_API_KEY; writes need RAG_ADMIN_API_KEY (when set). Every
endpoint routes to `collection`, given in the JSON body or the query string.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from rag_api.access.grant import audit
from rag_api.http.answered import answered
from rag_api.http.auth import require_reader, require_writer
from rag_api.http.deps import HubDep, WatcherDep, indexer_status
from rag_api.http.hot_reads import HotRead
from rag_api.hub import Hub
from rag_api.kbadmin import models, reads, writes
from rag_api.points.collection import Collection
from rag_api.routing import named, resolve

router = APIRouter(prefix="/v1/rag", tags=["rag admin"])
READ = [Depends(require_reader)]
WRITE = [Depends(require_writer)]
Result = dict[str, Any]
CollectionParam = Annotated[str | None, Query(description="default: default_collection")]
EXACT = {"response_model_exclude_unset": True}  # the keys the route built, none added


def audited(action: str, kb: Collection, result: Result) -> Result:
    """The write's audit line (its counts and sources), then its answer."""
    audit(action, kb.name, **{k: v for k, v in result.items() if not isinstance(v, dict)})
    return result


def one(hub: Hub, in_body: str | None, in_query: str | None) -> Collection:
    """The collection named in the body or the query (they must agree), else the default."""
    return hub.collection(named(in_body, in_query))


@router.get("/status", dependencies=READ, response_model=models.Status, **EXACT)
def status(hub: HubDep, watcher: WatcherDep, collection: CollectionParam = None) -> Response:
    """The collection's state, and the folder watcher's for it when this process watches."""
    kb = one(hub, None, collection)
    watching = indexer_status(watcher)
    indexer = {"running": watching["running"], **(watching["collections"].get(kb.name) or {})}
    return answered(reads.status(hub, kb, indexer))


@router.get("/sources", dependencies=READ, response_model=models.SourceList, **EXACT)
def sources(hub: HubDep, collection: CollectionParam = None) -> Response:
    return answered(reads.sources(one(hub, None, collection)))


@router.get("/chunks", dependencies=READ, response_model=models.ChunkPage, **EXACT)
def chunks(params: Annotated[models.ChunkFilters, Query()], hub: HubDep) -> Response:
    return answered(reads.list_chunks(one(hub, params.collection, None), params))


@router.post("/chunks/list", dependencies=READ, response_model=models.ChunkPage, **EXACT)
def chunks_list(
    body: models.ListChunks, hub: HubDep, collection: CollectionParam = None
) -> Response:
    kb = one(hub, body.collection, collection)
    return answered(reads.list_chunks(kb, body, body.metadata))


@router.post("/search", dependencies=READ, response_model=models.SearchResults, **EXACT)
def search(body: models.Search, hub: HubDep, collection: CollectionParam = None) -> Response:
    """Passages for the query from the collection, or from where `auto` routes it."""
    target = resolve(hub, named(body.collection, collection), body.collections)
    return answered(reads.search_results(hub, target, body))


@router.post("/context", dependencies=READ, response_model=models.ContextBlock, **EXACT)
def context(body: models.Context, hub: HubDep, collection: CollectionParam = None) -> Response:
    """The passages as one block for a prompt, from the collection or from where `auto` routes."""
    target = resolve(hub, named(body.collection, collection), body.collections)
    return answered(reads.context(hub, target, body))


# the reads rag_api.http.hot_reads serves without FastAPI's per-request work (never with a query
# string, so the collection comes from the body)
HOT = [
    HotRead("/v1/rag/chunks/list", models.ListChunks, lambda hub, b, _: chunks_list(b, hub)),
    HotRead("/v1/rag/search", models.Search, lambda hub, b, _: search(b, hub)),
    HotRead("/v1/rag/context", models.Context, lambda hub, b, _: context(b, hub)),
]


@router.post("/chunks/update", dependencies=WRITE)
def chunks_update(
    body: models.UpdateChunk, hub: HubDep, collection: CollectionParam = None
) -> Result:
    kb = one(hub, body.collection, collection)
    return audited("chunks/update", kb, writes.update_chunk(kb, body))


@router.post("/upsert/document", dependencies=WRITE)
def upsert_document(
    body: models.UpsertDocument, hub: HubDep, collection: CollectionParam = None
) -> Result:
    kb = one(hub, body.collection, collection)
    return audited("upsert/document", kb, writes.upsert_document(kb, body))


@router.post("/add/document", dependencies=WRITE)
def add_document(
    body: models.AddDocument, hub: HubDep, collection: CollectionParam = None
) -> Result:
    kb = one(hub, body.collection, collection)
    return audited("add/document", kb, writes.add_document(kb, body))


@router.post("/add/chunks", dependencies=WRITE)
def add_chunks(body: models.AddChunks, hub: HubDep, collection: CollectionParam = None) -> Result:
    kb = one(hub, body.collection, collection)
    return audited("add/chunks", kb, writes.add_chunks(kb, body))


@router.post("/remove", dependencies=WRITE)
def remove(body: models.Remove, hub: HubDep, collection: CollectionParam = None) -> Result:
    kb = one(hub, body.collection, collection)
    return audited("remove", kb, writes.remove(kb, body))


@router.post("/reload", dependencies=WRITE)
def reload(
    hub: HubDep,
    body: models.Reload | None = None,
    collection: CollectionParam = None,
) -> Result:
    """The body is optional here: a bare POST reconciles the default collection."""
    body = body or models.Reload()
    kb = one(hub, body.collection, collection)
    return audited("reload", kb, writes.reload(kb, body))
