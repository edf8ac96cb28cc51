"""POST /query/{collection}: retrieve, then answer (or only retrieve, with generate=false)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.http.auth import require_reader
from rag_api.http.deps import GenerationDep, HubDep
from rag_api.http.hot_reads import hot
from rag_api.http.model_response import STREAMED, model_response
from rag_api.http.sse import EventStream
from rag_api.hub import Hub

router = APIRouter(tags=["query"], dependencies=[Depends(require_reader)])


@router.post(
    "/query/{collection}",
    response_model=QueryAnswer,
    response_model_exclude_unset=True,
    responses=STREAMED,
)
# a retrieval-only query, served by rag_api.http.hot_reads without FastAPI's per-request work
@hot(
    lambda hub, body, collection: answer(hub, collection, body),
    takes=lambda body: not body.stream and not body.generate,
)
async def query(
    collection: str,
    body: QueryBody,
    hub: HubDep,
    generation: GenerationDep,
) -> Response:
    """Answer a question from one collection, with the passages it is grounded in; with
    `stream: true`, as server-sent events (sources, then the answer's pieces, then done)."""
    if body.stream:
        events = await generation.run(hub.query.events, collection, body)
        return EventStream(iter(events), events.close, generation)
    if body.generate:
        return await generation.run(answer, hub, collection, body)
    return await run_in_threadpool(answer, hub, collection, body)


def answer(hub: Hub, collection: str, body: QueryBody) -> Response:
    """The query's answer, serialised in the worker thread that made it."""
    return model_response(hub.query.ask(collection, body))
