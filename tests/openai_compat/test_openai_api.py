"""The OpenAI-compatible API through the official SDK (sync and async) and raw HTTP: extractive
answers, streams, model routing (the error answers: test_openai_errors.py)."""

from __future__ import annotations

import asyncio
import html
import re

import httpx
import openai
import pytest
from openai.types import Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.support.openai_support import REFUND, RESPONSE_EVENTS, ask, sse_events

REFUND_SENTENCE = "You can ask for a full refund within 30 days of your first payment."
PRICE = "How much does the Business plan cost?"
PRICE_SENTENCE = "The Business plan costs $15 per member per month billed annually."


# the footer: each cited passage a link to its page, signed (it opens without a key)
FOOTER = r"\n\nSources: \[1\] \[{source}\]\(http://127\.0\.0\.1:\d+/passages/p1\.[\w-]+\.[\w-]+\)"


def assert_grounded(text: str, source: str = "billing.md") -> None:
    assert REFUND_SENTENCE in text and "[1]" in text
    assert re.search(FOOTER.format(source=re.escape(source)) + "$", text), text


def test_models_are_the_enabled_collections(server, client):
    # then `auto`, which routes each question to the collection(s) it belongs to
    assert [m.id for m in client.models.list()] == ["docs", "quiet", "auto"]
    raw = httpx.get(server.url + "/v1/models").json()
    assert raw["object"] == "list"
    for card in raw["data"]:
        Model.model_validate(card, strict=True)
        assert card["owned_by"] == "rag-hub" and card["created"] > 0
    assert client.models.retrieve("rag/quiet").id == "quiet"
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("off")
    assert info.value.code == "model_not_found"


def passage_page(page: str) -> tuple[str, str]:
    """The id and the text of the passage a passage page shows (its neighbours left out)."""
    shown = re.search(r'<article id="passage" class="passage" data-id="([^"]+)"', page)
    text = re.search(r'<pre class="text cited" id="passage-text">(.*?)</pre>', page, re.S)
    assert shown and text, page
    return html.unescape(shown.group(1)), html.unescape(text.group(1))


def test_each_cited_passage_in_the_footer_links_to_its_page(server, client):
    # billing.md is two chunks, and the price is in its second: a link to the document's first
    # chunk, or to any chunk but the cited one, shows another passage
    reply = client.chat.completions.create(model="docs", messages=ask(PRICE))
    link = re.search(r"\[billing\.md\]\((\S+)\)$", reply.choices[0].message.content).group(1)
    assert link.startswith(server.url + "/passages/")
    cited = reply.model_extra["sources"][0]
    assert cited["chunk_index"] == 1 and PRICE_SENTENCE in cited["text"]
    assert cited["id"] == "docs:billing.md#1"
    page = httpx.get(link)  # no key, no JavaScript: the passage itself
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert passage_page(page.text) == (cited["id"], cited["text"])
    assert REFUND_SENTENCE not in passage_page(page.text)[1]  # the first chunk: its neighbour
    console = f"/console/collections/docs?source=billing.md#chunk-{cited['chunk_index']}"
    assert html.escape(console) in page.text


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


def test_with_include_usage_every_chunk_before_the_usage_one_has_usage_null(server) -> None:
    body = {"model": "docs", "messages": ask(REFUND), "stream": True}
    body["stream_options"] = {"include_usage": True}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body) as response:
        events = sse_events(response.iter_lines())
    *chunks, usage, done = [data for _, data in events]
    assert done == "[DONE]" and usage["choices"] == [] and usage["usage"] is not None
    assert len(chunks) > 2 and all("usage" in c and c["usage"] is None for c in chunks)


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
    # the same answer: its passage links may differ in their expiry, signed a second apart
    unsigned = {
        re.sub(r"/passages/[\w.-]+", "/passages/…", t) for t in (completion, streamed, output_text)
    }
    assert len(unsigned) == 1
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
        assert [m["id"] for m in http.get("/models").json()["data"]] == ["docs", "quiet", "auto"]
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
