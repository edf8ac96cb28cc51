"""/v1/rag/*: the voice pipeline's knowledge-base admin API (logic in rag_api.kbadmin).

Reads accept RAG_API_KEY or RAG_ADMIN_API_KEY; writes need RAG_ADMIN_API_KEY (when set).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from rag_api.auth import require_admin, require_reader
from rag_api.collection import Collection
from rag_api.errors import InvalidRequest
from rag_api.hub import Hub
from rag_api.kbadmin import reads, schemas, writes
from rag_api.routes.deps import get_hub

router = APIRouter(prefix="/v1/rag", tags=["rag admin"])
READ = [Depends(require_reader)]
WRITE = [Depends(require_admin)]
Result = dict[str, Any]
CollectionParam = Annotated[str | None, Query(description="default: default_collection")]


def routed(hub: Hub, in_body: str | None, in_query: str | None) -> Collection:
    """The collection named in the body or the query (they must agree), else the default."""
    if in_body and in_query and in_body != in_query:
        raise InvalidRequest(
            f"collection: the body says '{in_body}' but the query says '{in_query}'"
        )
    return hub.collection(in_body or in_query)


@router.get("/status", dependencies=READ)
def status(collection: CollectionParam = None, hub: Hub = Depends(get_hub)) -> Result:
    # the folder watcher (issue 6) reports its state next to these fields, under "indexer"
    return reads.status(hub, routed(hub, None, collection))


@router.get("/sources", dependencies=READ)
def sources(collection: CollectionParam = None, hub: Hub = Depends(get_hub)) -> Result:
    return reads.sources(routed(hub, None, collection))


@router.get("/chunks", dependencies=READ)
def chunks(params: Annotated[schemas.ChunkFilters, Query()], hub: Hub = Depends(get_hub)) -> Result:
    return reads.list_chunks(routed(hub, params.collection, None), params)


@router.post("/chunks/list", dependencies=READ)
def chunks_list(
    body: schemas.ListChunks, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return reads.list_chunks(routed(hub, body.collection, collection), body, body.metadata)


@router.post("/search", dependencies=READ)
def search(
    body: schemas.Search, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return reads.search_results(routed(hub, body.collection, collection), body)


@router.post("/context", dependencies=READ)
def context(
    body: schemas.Context, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return reads.context(routed(hub, body.collection, collection), body)


@router.post("/chunks/update", dependencies=WRITE)
def chunks_update(
    body: schemas.UpdateChunk, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return writes.update_chunk(routed(hub, body.collection, collection), body)


@router.post("/upsert/document", dependencies=WRITE)
def upsert_document(
    body: schemas.UpsertDocument, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return writes.upsert_document(routed(hub, body.collection, collection), body)


@router.post("/add/document", dependencies=WRITE)
def add_document(
    body: schemas.AddDocument, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return writes.add_document(routed(hub, body.collection, collection), body)


@router.post("/add/chunks", dependencies=WRITE)
def add_chunks(
    body: schemas.AddChunks, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return writes.add_chunks(routed(hub, body.collection, collection), body)


@router.post("/remove", dependencies=WRITE)
def remove(
    body: schemas.Remove, collection: CollectionParam = None, hub: Hub = Depends(get_hub)
) -> Result:
    return writes.remove(routed(hub, body.collection, collection), body)


@router.post("/reload", dependencies=WRITE)
def reload(
    body: schemas.Reload | None = None,
    collection: CollectionParam = None,
    hub: Hub = Depends(get_hub),
) -> Result:
    body = body or schemas.Reload()
    return writes.reload(routed(hub, body.collection, collection), body)
