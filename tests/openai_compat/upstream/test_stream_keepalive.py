"""Streams stay alive while a slow model thinks: `: keep-alive` comments while the first token is
awaited (OpenAI chat and Responses streams, /query with stream: true), and the final usage chunk
(`stream_options.include_usage`) carries the upstream's own token counts."""

from __future__ import annotations

import httpx
import openai
import pytest

from rag_api.http.sse import EventStream
from tests.support.fakes.http import words
from tests.support.openai_support import REFUND, ask

ANSWER = "You have 30 days [1]."


@pytest.fixture(autouse=True)
def answering(upstreams):
    for fake in upstreams:
        fake.reply = ANSWER


@pytest.fixture
def slow_first_token(upstreams, monkeypatch):
    """Keep-alives every 0.1 s; each upstream waits 0.6 s before its first piece (then none)."""
    monkeypatch.setattr(EventStream, "keepalive_s", 0.1)
    for fake in upstreams:
        fake.first_token_delay = 0.6
    yield
    for fake in upstreams:
        fake.first_token_delay = 0.0


def raw_lines(url: str, body: dict) -> list[str]:
    with httpx.stream("POST", url, json=body, timeout=30) as response:
        assert response.status_code == 200, response.read()
        return list(response.iter_lines())


def comments_before_first(lines: list[str], marker: str) -> int:
    first = next(i for i, line in enumerate(lines) if marker in line)
    return sum(line == ": keep-alive" for line in lines[:first])


@pytest.mark.usefixtures("slow_first_token")
@pytest.mark.parametrize("model", ["docs", "relay"])
def test_keep_alive_comments_while_the_first_token_is_awaited(server, model):
    chat = raw_lines(
        server.url + "/v1/chat/completions",
        {"model": model, "messages": ask(REFUND), "stream": True},
    )
    assert comments_before_first(chat, '"content":"You') >= 3, chat
    assert chat[0].startswith("data: ") and '"role":"assistant"' in chat[0]  # the head at once
    responses = raw_lines(
        server.url + "/v1/responses", {"model": model, "input": REFUND, "stream": True}
    )
    assert comments_before_first(responses, "response.output_text.delta") >= 3
    query = raw_lines(server.url + f"/query/{model}", {"query": REFUND, "stream": True})
    assert comments_before_first(query, "event: sources") >= 3


@pytest.mark.usefixtures("slow_first_token")
def test_the_sdk_reads_a_kept_alive_stream_unharmed(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    chunks = list(client.chat.completions.create(model="docs", messages=ask(REFUND), stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks).startswith(ANSWER)


@pytest.mark.parametrize("model", ["docs", "relay"])
def test_include_usage_reports_the_upstreams_own_counts(server, upstreams, model):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model=model,
            messages=ask(REFUND),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert all(c.usage is None for c in chunks[:-1])
    fake = upstreams[0] if model == "docs" else upstreams[1]
    path = "/api/chat" if model == "docs" else "/v1/chat/completions"
    sent = fake.calls(path)[-1].body["messages"]
    assert last.usage.prompt_tokens == sum(words(m["content"]) for m in sent)
    assert last.usage.completion_tokens == words(ANSWER)
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
