"""The OpenAI-compatible API: every collection is a model. Served under /v1 and without the prefix,
because AnythingLLM calls `{base}/models` and `{base}/chat/completions` with whatever base the user typed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from rag_api.access.grant import audit
from rag_api.http.any_path import ANY
from rag_api.http.auth import require_reader
from rag_api.http.deps import GenerationDep, HubDep, ResponsesDep
from rag_api.http.model_response import STREAMED
from rag_api.http.openai_errors import OpenAIRoute
from rag_api.http.sse import EventStream
from rag_api.hub import Hub
from rag_api.openai_compat import chat, responses
from rag_api.openai_compat.conversation import from_chat, from_responses, input_items
from rag_api.openai_compat.embeddings import EmbeddingsRequest, create_embeddings
from rag_api.openai_compat.model_names import find_model, model_card, models
from rag_api.openai_compat.models import (
    ChatCompletion,
    ChatRequest,
    ModelCard,
    ModelList,
    ResponseObject,
    ResponsesRequest,
)
from rag_api.openai_compat.reply import start_reply

router = APIRouter(tags=["openai"], dependencies=[Depends(require_reader)], route_class=OpenAIRoute)
EXACT: dict[str, Any] = {"response_model_exclude_unset": True}
STREAMS: dict[str, Any] = {"responses": STREAMED}
TWIN: dict[str, Any] = {"include_in_schema": False}  # the unprefixed twin of a /v1 route


def public_base(request: Request, hub: Hub) -> str:
    """Where people reach the hub: RAG_PUBLIC_URL, else this request's own base URL."""
    return hub.settings.public_url or str(request.base_url)


@router.get("/models", response_model=ModelList, **EXACT, **TWIN)
@router.get("/v1/models", response_model=ModelList, **EXACT)
def list_models(hub: HubDep) -> dict[str, Any]:
    """The enabled collections, one model each."""
    return {"object": "list", "data": [model_card(hub, name) for name in models(hub)]}


@router.get(f"/models/{{model:{ANY}}}", response_model=ModelCard, **EXACT, **TWIN)
@router.get(f"/v1/models/{{model:{ANY}}}", response_model=ModelCard, **EXACT)
def retrieve_model(model: str, hub: HubDep) -> dict[str, Any]:
    """One collection as a model (no default fallback: this is a lookup)."""
    return model_card(hub, find_model(hub, model))


@router.post("/chat/completions", response_model=ChatCompletion, **EXACT, **STREAMS, **TWIN)
@router.post("/v1/chat/completions", response_model=ChatCompletion, **EXACT, **STREAMS)
async def chat_completions(
    request: Request,
    body: ChatRequest,
    hub: HubDep,
    generation: GenerationDep,
) -> Response:
    """Answer the conversation's last user message from the model's collection."""
    conversation = from_chat(body.messages)
    reply = await generation.run(
        start_reply,
        hub,
        body.model,
        conversation,
        body.temperature,
        body.token_limit,
        body.options(),
        "response_format",
        body.filters,
        public_base(request, hub),
        hub.links,
    )
    if body.stream:
        events = chat.completion_chunks(reply, body.include_usage)
        return EventStream(events, reply.close, generation)
    return JSONResponse(await generation.run(chat.completion, reply))


@router.post("/responses", response_model=ResponseObject, **EXACT, **STREAMS, **TWIN)
@router.post("/v1/responses", response_model=ResponseObject, **EXACT, **STREAMS)
async def create_response(
    request: Request,
    body: ResponsesRequest,
    hub: HubDep,
    generation: GenerationDep,
    stored: ResponsesDep,
) -> Response:
    """The Responses API over the same pipeline; `previous_response_id` continues a stored one."""
    earlier: list[Any] = []
    if body.previous_response_id:
        previous = await run_in_threadpool(
            stored.find, body.previous_response_id, "previous_response_id"
        )
        earlier = previous.items
    conversation = from_responses(body.input, body.instructions, earlier)
    reply = await generation.run(
        start_reply,
        hub,
        body.model,
        conversation,
        body.temperature,
        body.max_output_tokens,
        body.options(),
        "text.format",
        body.filters,
        public_base(request, hub),
        hub.links,
    )
    keep = None
    if body.store is not False and stored.enabled:
        keep = stored.keeper(reply.collection.name, [*earlier, *input_items(body.input)])
    if body.stream:
        events = responses.response_events(reply, body, keep)
        return EventStream(events, reply.close, generation)
    return JSONResponse(await generation.run(responses.response, reply, body, keep))


@router.get("/responses/{response_id}", response_model=ResponseObject, **EXACT, **TWIN)
@router.get("/v1/responses/{response_id}", response_model=ResponseObject, **EXACT)
def get_response(response_id: str, stored: ResponsesDep) -> JSONResponse:
    """A stored response, as it was answered."""
    return JSONResponse(stored.find(response_id).response)


@router.delete("/responses/{response_id}", **TWIN)
@router.delete("/v1/responses/{response_id}")
def delete_response(response_id: str, stored: ResponsesDep) -> dict[str, Any]:
    """Forget a stored response."""
    deleted = stored.delete(response_id)
    audit("delete response", deleted.collection, id=response_id)
    return {"id": response_id, "object": "response", "deleted": True}


@router.post("/embeddings", **TWIN)
@router.post("/v1/embeddings")
async def embeddings(body: EmbeddingsRequest, hub: HubDep) -> JSONResponse:
    """Vectors by a collection's embedder: `model` is the collection (document side) or
    `<collection>:query` (query side)."""
    return JSONResponse(await run_in_threadpool(create_embeddings, hub, body))
