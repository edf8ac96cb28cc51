"""/v1/rag/*: the voice pipeline's knowledge-base admin API (logic in rag_api.kbadmin).

Reads accept RAG_API_KEY or RAG_ADMIN_API_KEY; writes need RAG_ADMIN_API_KEY (when set). Every
endpoint routes to `collection`, given in the JSON body or the query string.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from rag_api.http.auth import require_reader, require_writer
from rag_api.http.deps import HubDep, WatcherDep, indexer_status
from rag_api.http.hot_reads import hot
from rag_api.http.model_response import model_response
from rag_api.kbadmin import models
from rag_api.schema import Answer

router = APIRouter(prefix="/v1/rag", tags=["rag admin"])
READ = [Depends(require_reader)]
WRITE = [Depends(require_writer)]
CollectionParam = Annotated[str | None, Query(description="default: default_collection")]
EXACT = {"response_model_exclude_unset": True}  # the keys the route built, none added


@router.get("/status", dependencies=READ, response_model=models.Status, **EXACT)
def status(hub: HubDep, watcher: WatcherDep, collection: CollectionParam = None) -> Response:
    """The collection's state, and the folder watcher's for it when this process watches."""
    return model_response(hub.kb.status(collection, indexer_status(watcher)))


@router.get("/sources", dependencies=READ, response_model=models.SourceList, **EXACT)
def sources(hub: HubDep, collection: CollectionParam = None) -> Response:
    return model_response(hub.kb.sources(collection))


@router.get("/chunks", dependencies=READ, response_model=models.ChunkPage, **EXACT)
def chunks(params: Annotated[models.ChunkFilters, Query()], hub: HubDep) -> Response:
    return model_response(hub.kb.chunks(params))


# the reads rag_api.http.hot_reads serves without FastAPI's per-request work (never with a query
# string, so the collection comes from the body)
@router.post("/chunks/list", dependencies=READ, response_model=models.ChunkPage, **EXACT)
@hot(lambda hub, body, _: chunks_list(body, hub))
def chunks_list(
    body: models.ListChunks, hub: HubDep, collection: CollectionParam = None
) -> Response:
    return model_response(hub.kb.chunks(body, collection))


# `"prefetch": true` is answered 202 at once (rag_api.kbadmin.prefetch)
PREFETCH = {202: {"model": models.Prefetching, "description": "prefetch started"}}


@router.post(
    "/search", dependencies=READ, response_model=models.SearchResults, responses=PREFETCH, **EXACT
)
@hot(lambda hub, body, _: search(body, hub))
def search(body: models.Search, hub: HubDep, collection: CollectionParam = None) -> Response:
    """Passages for the query from the collection, or from where `auto` routes it."""
    return read_response(hub.kb.search(body, collection))


@router.post(
    "/context", dependencies=READ, response_model=models.ContextBlock, responses=PREFETCH, **EXACT
)
@hot(lambda hub, body, _: context(body, hub))
def context(body: models.Context, hub: HubDep, collection: CollectionParam = None) -> Response:
    """The passages as one block for a prompt, from the collection or from where `auto` routes."""
    return read_response(hub.kb.context(body, collection))


def read_response(answer: Answer) -> Response:
    status = 202 if isinstance(answer, models.Prefetching) else 200
    return model_response(answer, status_code=status)


@router.post("/chunks/update", dependencies=WRITE, response_model=models.Updated)
def chunks_update(
    body: models.UpdateChunk, hub: HubDep, collection: CollectionParam = None
) -> Response:
    return model_response(hub.kb.update_chunk(body, collection))


@router.post("/upsert/document", dependencies=WRITE, response_model=models.Upserted)
def upsert_document(
    body: models.UpsertDocument, hub: HubDep, collection: CollectionParam = None
) -> Response:
    return model_response(hub.kb.upsert_document(body, collection))


@router.post("/add/document", dependencies=WRITE, response_model=models.Added)
def add_document(
    body: models.AddDocument, hub: HubDep, collection: CollectionParam = None
) -> Response:
    return model_response(hub.kb.add_document(body, collection))


@router.post("/add/chunks", dependencies=WRITE, response_model=models.Added)
def add_chunks(body: models.AddChunks, hub: HubDep, collection: CollectionParam = None) -> Response:
    return model_response(hub.kb.add_chunks(body, collection))


@router.post("/remove", dependencies=WRITE, response_model=models.Removed)
def remove(body: models.Remove, hub: HubDep, collection: CollectionParam = None) -> Response:
    return model_response(hub.kb.remove(body, collection))


@router.post("/reload", dependencies=WRITE, response_model=models.Reloaded)
def reload(
    hub: HubDep,
    body: models.Reload | None = None,
    collection: CollectionParam = None,
) -> Response:
    """The body is optional here: a bare POST reconciles the default collection."""
    return model_response(hub.kb.reload(body or models.Reload(), collection))
