"""/v1/rag/*: the voice pipeline's knowledge-base admin API (logic in rag_api.kbadmin).

Reads accept RAG_API_KEY or RAG_ADMIN_API_KEY; writes need RAG_ADMIN_API_KEY (when set). Every
endpoint routes to `collection`, given in the JSON body or the query string.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.params import Depends as Dependency
from fastapi.responses import Response
from pydantic import BaseModel

from rag_api.errors import InvalidRequest
from rag_api.http import answers
from rag_api.http.auth import require_admin, require_reader
from rag_api.http.declared import declared
from rag_api.http.deps import HubDep
from rag_api.http.hot_reads import HotRead
from rag_api.http.routes.indexer import indexer_status
from rag_api.hub import Hub
from rag_api.kbadmin import bodies, reads, writes
from rag_api.kbadmin import routed as auto_routes
from rag_api.points.collection import Collection

router = APIRouter(prefix="/v1/rag", tags=["rag admin"])
READ = [Depends(require_reader)]
WRITE = [Depends(require_admin)]
Result = dict[str, Any]
CollectionParam = Annotated[str | None, Query(description="default: default_collection")]
EXACT = {"response_model_exclude_unset": True}  # the keys the route built, none added
HOT: list[
    HotRead
] = []  # the reads rag_api.http.hot_reads serves without FastAPI's per-request work


def routed_name(in_body: str | None, in_query: str | None) -> str | None:
    """The collection named in the body or the query (they must agree), if any."""
    if in_body and in_query and in_body != in_query:
        raise InvalidRequest(
            f"collection: the body says '{in_body}' but the query says '{in_query}'"
        )
    return in_body or in_query


def routed(hub: Hub, in_body: str | None, in_query: str | None) -> Collection:
    """The collection named in the body or the query (they must agree), else the default."""
    return hub.collection(routed_name(in_body, in_query))


@router.get("/status", dependencies=READ, response_model=answers.Status, **EXACT)
def status(request: Request, hub: HubDep, collection: CollectionParam = None) -> Response:
    """The collection's state, and the folder watcher's for it when this process watches."""
    kb = routed(hub, None, collection)
    watcher = indexer_status(request)
    indexer = watcher["collections"].get(kb.name)
    state = {**reads.status(hub, kb), "indexer": {"running": watcher["running"], **(indexer or {})}}
    return declared(answers.Status, state)


@router.get("/sources", dependencies=READ, response_model=answers.SourceList, **EXACT)
def sources(hub: HubDep, collection: CollectionParam = None) -> Response:
    return declared(answers.SourceList, reads.sources(routed(hub, None, collection)))


@router.get("/chunks", dependencies=READ, response_model=answers.ChunkPage, **EXACT)
def chunks(params: Annotated[bodies.ChunkFilters, Query()], hub: HubDep) -> Response:
    return declared(
        answers.ChunkPage, reads.list_chunks(routed(hub, params.collection, None), params)
    )


def _post(
    path: str,
    body_type: type[bodies.Routed],
    action: Callable[[Collection, Any], Result],
    access: list[Dependency],
    answer: type[BaseModel] | None = None,
    auto: Callable[[Hub, Any], Result] | None = None,
) -> None:
    """POST `path`: validate the body, route to its collection, run `action` (or `auto` when
    the body asks for routing by the question: kbadmin.routed); an `answer` model checks and
    serialises the result in the worker thread (routes.declared)."""

    def run(body, hub: Hub, collection: str | None) -> Result:
        if auto is not None:
            name = routed_name(body.collection, collection)
            if auto_routes.wants_routing(hub, name, body):
                return auto(hub, body)
        return action(routed(hub, body.collection, collection), body)

    def endpoint(body, hub: HubDep, collection: CollectionParam = None) -> Result:
        return run(body, hub, collection)

    def checked(body, hub: HubDep, collection: CollectionParam = None) -> Response:
        return declared(answer, run(body, hub, collection))

    if answer is not None:
        endpoint = checked
        if access is READ:
            work = lambda hub, body, _: checked(body, hub)  # noqa: E731
            HOT.append(HotRead(router.prefix + path, body_type, work))

    endpoint.__annotations__["body"] = body_type
    name = path.strip("/").replace("/", "_")
    shape = {"response_model": answer, **EXACT} if answer else {}
    router.add_api_route(path, endpoint, methods=["POST"], dependencies=access, name=name, **shape)


_post(
    "/chunks/list",
    bodies.ListChunks,
    lambda c, b: reads.list_chunks(c, b, b.metadata),
    READ,
    answers.ChunkPage,
)
_post(
    "/search",
    bodies.Search,
    reads.search_results,
    READ,
    answers.SearchResults,
    auto_routes.search_results,
)
_post("/context", bodies.Context, reads.context, READ, answers.ContextBlock, auto_routes.context)
_post("/chunks/update", bodies.UpdateChunk, writes.update_chunk, WRITE)
_post("/upsert/document", bodies.UpsertDocument, writes.upsert_document, WRITE)
_post("/add/document", bodies.AddDocument, writes.add_document, WRITE)
_post("/add/chunks", bodies.AddChunks, writes.add_chunks, WRITE)
_post("/remove", bodies.Remove, writes.remove, WRITE)


@router.post("/reload", dependencies=WRITE)
def reload(
    hub: HubDep,
    body: bodies.Reload | None = None,
    collection: CollectionParam = None,
) -> Result:
    """The body is optional here: a bare POST reconciles the default collection."""
    body = body or bodies.Reload()
    return writes.reload(routed(hub, body.collection, collection), body)
