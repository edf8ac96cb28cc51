"""The OpenAI-compatible API: every collection is a model. Served under /v1 and without the prefix,
because AnythingLLM calls `{base}/models` and `{base}/chat/completions` with whatever base the user typed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from rag_api.answering.sse import EventStream
from rag_api.http.answers import STREAMED, ChatCompletion, ModelCard, ModelList, ResponseObject
from rag_api.http.any_path import ANY
from rag_api.http.auth import require_reader
from rag_api.http.deps import GenerationDep, HubDep
from rag_api.http.openai_errors import OpenAIRoute
from rag_api.openai_compat import chat, responses
from rag_api.openai_compat.bodies import ChatRequest, ResponsesRequest
from rag_api.openai_compat.conversation import from_chat, from_responses
from rag_api.openai_compat.models import find_model, model_card, models
from rag_api.openai_compat.reply import start_reply

router = APIRouter(tags=["openai"], dependencies=[Depends(require_reader)], route_class=OpenAIRoute)


def list_models(hub: HubDep) -> dict[str, Any]:
    """The enabled collections, one model each."""
    return {"object": "list", "data": [model_card(hub, name) for name in models(hub)]}


def retrieve_model(model: str, hub: HubDep) -> dict[str, Any]:
    """One collection as a model (no default fallback: this is a lookup)."""
    return model_card(hub, find_model(hub, model))


async def chat_completions(
    body: ChatRequest,
    hub: HubDep,
    generation: GenerationDep,
) -> Response:
    """Answer the conversation's last user message from the model's collection."""
    conversation = from_chat(body.messages)
    reply = await generation.run(
        start_reply, hub, body.model, conversation, body.temperature, body.token_limit
    )
    if body.stream:
        events = chat.completion_chunks(reply, body.include_usage)
        return EventStream(events, reply.close, generation)
    return JSONResponse(await generation.run(chat.completion, reply))


async def create_response(
    body: ResponsesRequest,
    hub: HubDep,
    generation: GenerationDep,
) -> Response:
    """The Responses API over the same pipeline."""
    conversation = from_responses(body.input, body.instructions)
    reply = await generation.run(
        start_reply, hub, body.model, conversation, body.temperature, body.max_output_tokens
    )
    if body.stream:
        return EventStream(responses.response_events(reply, body), reply.close, generation)
    return JSONResponse(await generation.run(responses.response, reply, body))


for prefix in ("/v1", ""):
    shown = prefix == "/v1"  # the unprefixed twins stay out of the OpenAPI schema
    for path, endpoint, method, answer in (
        ("/models", list_models, "GET", ModelList),
        (f"/models/{{model:{ANY}}}", retrieve_model, "GET", ModelCard),
        ("/chat/completions", chat_completions, "POST", ChatCompletion),
        ("/responses", create_response, "POST", ResponseObject),
    ):
        streamed = STREAMED if method == "POST" else None
        router.add_api_route(
            prefix + path,
            endpoint,
            methods=[method],
            include_in_schema=shown,
            response_model=answer,
            response_model_exclude_unset=True,
            responses=streamed,
        )
