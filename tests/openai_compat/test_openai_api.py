"""The OpenAI-compatible API through the official SDK (sync and async) and raw HTTP, extractive answers."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from openai.types import Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from rag_api.settings import Settings
from tests.conftest import assert_error_shape, hash_collection, write_config
from tests.support.openai_support import REFUND, sse_events, start_indexed, write_kb

REFUND_SENTENCE = "You can ask for a full refund within 30 days of your first payment."
RESPONSE_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai_api")
    kb = write_kb(root / "kb")
    collections = {
        "docs": hash_collection(kb),
        "quiet": hash_collection(kb, citations=False),
        "off": hash_collection(kb, enabled=False),
    }
    config = write_config(root / "collections.yaml", collections)
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, live = start_indexed(settings, "docs", "quiet")
    yield live
    live.stop()
    hub.close()


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)


def ask(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


def assert_grounded(text: str, source: str = "billing.md") -> None:
    assert REFUND_SENTENCE in text and "[1]" in text
    assert text.endswith(f"\n\nSources: [1] {source}"), text


def test_models_are_the_enabled_collections(server, client):
    assert [m.id for m in client.models.list()] == ["docs", "quiet"]
    raw = httpx.get(server.url + "/v1/models").json()
    assert raw["object"] == "list"
    for card in raw["data"]:
        Model.model_validate(card, strict=True)
        assert card["owned_by"] == "rag-hub" and card["created"] > 0
    assert client.models.retrieve("rag/quiet").id == "quiet"
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("off")
    assert info.value.code == "model_not_found"


def test_chat_completion(server, client):
    completion = client.chat.completions.create(model="docs", messages=ask(REFUND))
    choice = completion.choices[0]
    assert_grounded(choice.message.content)
    assert (choice.finish_reason, choice.message.role, completion.model) == (
        "stop",
        "assistant",
        "docs",
    )
    assert completion.id.startswith("chatcmpl-") and completion.object == "chat.completion"
    assert completion.usage.total_tokens == 0  # extractive: no LLM, no tokens
    extra = completion.model_extra
    assert extra["generator"] == "extractive" and "warning" not in extra
    assert extra["sources"][0]["source"] == "billing.md"
    assert REFUND_SENTENCE in extra["sources"][0]["text"]
    raw = httpx.post(
        server.url + "/v1/chat/completions", json={"model": "docs", "messages": ask(REFUND)}
    )
    ChatCompletion.model_validate(raw.json(), strict=True)


def test_chat_stream(server, client):
    chunks = list(
        client.chat.completions.create(
            model="docs", messages=ask(REFUND), stream=True, stream_options={"include_usage": True}
        )
    )
    *answer, final, usage = chunks
    assert answer[0].choices[0].delta.role == "assistant"
    assert len(answer) > 3  # the extractive answer streams in pieces too
    assert_grounded("".join(c.choices[0].delta.content for c in answer))
    assert [c.choices[0].finish_reason for c in answer] == [None] * len(answer)
    assert final.choices[0].finish_reason == "stop" and final.choices[0].delta.content is None
    assert final.model_extra["sources"][0]["source"] == "billing.md"
    assert usage.choices == [] and usage.usage.total_tokens == 0
    assert len({c.id for c in chunks}) == 1 and {c.model for c in chunks} == {"docs"}
    body = {"model": "docs", "messages": ask(REFUND), "stream": True}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.iter_lines())
    assert events[-1] == (None, "[DONE]")
    for _, data in events[:-1]:
        ChatCompletionChunk.model_validate(data, strict=True)
        assert "usage" not in data  # only with stream_options.include_usage


def test_async_client_chat_and_responses(server):
    async def main() -> tuple[str, str, str, list[str]]:
        async with openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x") as client:
            completion = await client.chat.completions.create(model="docs", messages=ask(REFUND))
            stream = await client.chat.completions.create(
                model="docs", messages=ask(REFUND), stream=True
            )
            streamed = "".join([c.choices[0].delta.content or "" async for c in stream])
            response = await client.responses.create(model="docs", input=REFUND)
            events = await client.responses.create(model="docs", input=REFUND, stream=True)
            kinds = [event.type async for event in events]
        return completion.choices[0].message.content, streamed, response.output_text, kinds

    completion, streamed, output_text, kinds = asyncio.run(main())
    assert completion == streamed == output_text
    assert_grounded(completion)
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"


def test_responses_create(server, client):
    response = client.responses.create(model="gpt-4o", input=REFUND, instructions="Be brief.")
    assert_grounded(response.output_text)
    assert response.id.startswith("resp_") and response.status == "completed"
    assert (response.model, response.instructions, response.tools) == ("gpt-4o", "Be brief.", [])
    message = response.output[0]
    assert (message.type, message.role, message.status) == ("message", "assistant", "completed")
    assert message.content[0].type == "output_text" and message.content[0].annotations == []
    assert response.usage.total_tokens == 0
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.model_extra["sources"][0]["source"] == "billing.md"
    raw = httpx.post(server.url + "/v1/responses", json={"model": "docs", "input": REFUND})
    Response.model_validate(raw.json(), strict=True)


def test_responses_stream_event_sequence(server, client):
    events = list(client.responses.create(model="docs", input=REFUND, stream=True))
    kinds = [event.type for event in events]
    deltas = kinds.count("response.output_text.delta")
    assert deltas > 3
    assert (
        kinds == RESPONSE_EVENTS[:4] + ["response.output_text.delta"] * deltas + RESPONSE_EVENTS[5:]
    )
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert_grounded(text)
    done = events[-1].response
    assert done.output_text == text == events[-4].text
    assert done.model_extra["sources"][0]["source"] == "billing.md"
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    item_ids = {e.item_id for e in events if hasattr(e, "item_id")} | {done.output[0].id}
    assert len(item_ids) == 1
    body = {"model": "docs", "input": REFUND, "stream": True}
    with httpx.stream("POST", server.url + "/v1/responses", json=body) as response:
        raw = sse_events(response.iter_lines())
    adapter = TypeAdapter(ResponseStreamEvent)
    for name, data in raw:
        assert name == data["type"]
        adapter.validate_python(data, strict=True)


def test_routes_without_the_v1_prefix(server):
    with httpx.Client(base_url=server.url) as http:
        assert [m["id"] for m in http.get("/models").json()["data"]] == ["docs", "quiet"]
        chat = http.post("/chat/completions", json={"model": "docs", "messages": ask(REFUND)})
        assert_grounded(chat.json()["choices"][0]["message"]["content"])
        response = http.post("/responses", json={"model": "docs", "input": REFUND})
        assert_grounded(response.json()["output"][0]["content"][0]["text"])


def test_model_routing_and_citations_switch(server, client):
    fallback = client.chat.completions.create(model="gpt-4o", messages=ask(REFUND))
    assert fallback.model == "gpt-4o"
    assert_grounded(fallback.choices[0].message.content)
    quiet = client.chat.completions.create(model="rag/quiet", messages=ask(REFUND))
    assert quiet.model == "rag/quiet"
    text = quiet.choices[0].message.content
    assert REFUND_SENTENCE in text and "Sources:" not in text  # citations: false
    assert quiet.model_extra["sources"][0]["source"] == "billing.md"
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="rag/nope", messages=ask(REFUND))
    assert info.value.code == "model_not_found" and info.value.param == "model"
    with pytest.raises(openai.InternalServerError) as info:
        client.responses.create(model="off", input=REFUND)
    assert info.value.code == "rag_not_enabled"


def deep(depth: int) -> list:
    value: list = ["hi"]
    for _ in range(depth - 1):
        value = [value]
    return value


MALFORMED = [
    ("responses", {"model": "docs"}, "input", "Field required"),
    ("responses", {"model": "docs", "input": 5}, "input", "string or a list"),
    (
        "responses",
        {"model": "docs", "input": [{"role": "user", "content": [{"type": "input_vid"}]}]},
        "input[0].content[0].type",
        "unsupported content part type 'input_vid'",
    ),
    (
        "responses",
        {"model": "docs", "input": [{"role": "robot", "content": "hi"}]},
        "input[0].role",
        "must be one of",
    ),
    (
        "responses",
        {"model": "docs", "input": "hi", "previous_response_id": "resp_1"},
        "previous_response_id",
        "not supported",
    ),
    ("chat/completions", {"model": "docs"}, "messages", "Field required"),
    ("chat/completions", {"model": "docs", "messages": []}, "messages", "at least 1"),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": [{"type": "video"}]}]},
        "messages[0].content[0].type",
        "unsupported content part type 'video'",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
        "messages[0].content[0]",
        "needs a 'text' field",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": 5}]},
        "messages[0].content",
        "string or a list of content parts",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "wizard", "content": "hi"}]},
        "messages[0].role",
        "Input should be",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "system", "content": "Be brief."}]},
        "messages",
        "no user message",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "temperature": 3},
        "temperature",
        "less than or equal to 2",
    ),
    ("chat/completions", {"model": "docs", "messages": ask("hi"), "n": 2}, "n", "less than"),
    # values Python's JSON parser accepts but nothing downstream can hold (rag_api.json_body)
    (
        "chat/completions",
        '{"model": "docs", "messages": [{"role": "user", "content": "\\ud800"}]}',
        "messages[0].content",
        "lone surrogate",
    ),
    ("responses", '{"model": "docs", "input": "hi \\udc00"}', "input", "lone surrogate"),
    ("responses", {"model": "docs", "input": deep(300)}, "input", "nested more than 64"),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": deep(400)}]},
        "messages",
        "nested more than 64",
    ),
    (
        "chat/completions",
        '{"model": "docs", "messages": [], "temperature": NaN}',
        "temperature",
        "NaN",
    ),
]


@pytest.mark.parametrize(("route", "body", "param", "message"), MALFORMED)
def test_malformed_requests_are_400_in_openai_shape(server, route, body, param, message):
    sent = {"json": body} if isinstance(body, dict) else {"content": body.encode()}
    response = httpx.post(f"{server.url}/v1/{route}", **sent)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "invalid_request",
        param,
    )
    assert message in error["message"]


def test_a_body_over_the_limit_is_413_in_openai_shape_declared_or_streamed(server):
    huge = b'{"model": "docs", "input": "' + b"x" * (1024 * 1024) + b'"}'
    for content in (huge, iter([huge[:600_000], huge[600_000:]])):  # Content-Length / chunked
        response = httpx.post(server.url + "/v1/responses", content=content)
        assert response.status_code == 413
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "payload_too_large")


def test_sdk_raises_bad_request_and_other_routes_keep_the_hub_shape(server, client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="docs", messages=[{"role": "user", "content": [{"type": "video"}]}]
        )
    assert info.value.param == "messages[0].content[0].type"
    invalid_json = httpx.post(
        server.url + "/v1/responses", content=b"{", headers={"content-type": "application/json"}
    )
    assert invalid_json.status_code == 400 and invalid_json.json()["error"]["param"] == "body"
    wrong_method = httpx.get(server.url + "/v1/chat/completions").json()["error"]
    assert wrong_method["type"] == "invalid_request_error"
    hub_shape = httpx.post(server.url + "/query/docs", json={}, headers={"X-Request-ID": "q-1"})
    assert hub_shape.json() == {
        "error": {
            "code": "INVALID_REQUEST",
            "message": "query: Field required",
            "request_id": "q-1",
        }
    }


def test_unknown_model_is_404_when_configured(tmp_path, make_settings, serve):
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection()}, unknown_model="error"
    )
    live = serve(make_settings(config, "memory"))
    client = openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=ask(REFUND))
    assert info.value.code == "model_not_found" and "unknown_model: error" in info.value.message
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gpt-4o", input=REFUND)
    empty = client.responses.create(model="docs", input=REFUND)  # nothing indexed: no evidence
    assert empty.output_text == "No relevant information was found to answer this question."


def test_bearer_key_is_required_when_set(tmp_path, make_settings, serve):
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    live = serve(make_settings(config, "memory", api_key="reader-key", admin_api_key="admin-key"))
    wrong = openai.OpenAI(base_url=live.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        wrong.models.list()
    assert info.value.code == "invalid_api_key"
    for route in ("/v1/chat/completions", "/responses"):
        refused = httpx.post(live.url + route, json={"model": "docs", "input": REFUND})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"]["type"] == "invalid_request_error"
    for key in ("reader-key", "admin-key"):
        client = openai.OpenAI(base_url=live.url + "/v1", api_key=key, max_retries=0)
        assert [m.id for m in client.models.list()] == ["docs"]
        assert client.responses.create(model="docs", input=REFUND).status == "completed"


def test_every_openai_route_answers_errors_in_openai_shape(tmp_path, make_settings, serve):
    """The shape comes from the route: each route of the OpenAI router, refused (401) or called
    with the wrong method (405), answers OpenAI's error; a hub route keeps the hub's shape."""
    from rag_api.routes.openai import router

    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    live = serve(make_settings(config, "memory", api_key="reader-key"))
    calls = [
        (method, route.path.replace("{model:path}", "docs"))
        for route in router.routes
        for method in route.methods
    ]
    assert len(calls) == 8, calls
    key = {"Authorization": "Bearer reader-key"}
    with live.client() as client:
        for method, path in calls:
            for response, status, code in (
                (client.request(method, path, json={}), 401, "invalid_api_key"),
                (client.request("DELETE", path, headers=key), 405, "method_not_allowed"),
            ):
                error = response.json()["error"]
                assert response.status_code == status, (method, path, response.text)
                assert set(error) == {"message", "type", "param", "code"}, (path, error)
                assert (error["type"], error["code"]) == ("invalid_request_error", code)
        assert_error_shape(client.get("/collections"), 401, "UNAUTHORIZED")
        assert_error_shape(client.delete("/collections", headers=key), 405, "METHOD_NOT_ALLOWED")
