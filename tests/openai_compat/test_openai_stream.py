"""Real streaming through the OpenAI API: LLM tokens (Ollama, OpenAI-compatible upstream) are forwarded
as they arrive, a client that leaves stops the upstream, and outages fall back or say so."""

from __future__ import annotations

import re

import httpx
import openai
import pytest

from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.fakes.http import words
from tests.support.openai_support import REFUND, sse_events, start_indexed, write_kb

LONG_REPLY = " ".join(f"word{i}" for i in range(200))
ANSWER = "You have 30 days to ask for a refund [1]."
PUBLIC_URL = "https://rag.example.org/hub/"  # RAG_PUBLIC_URL: the base of the footer's links


def footer(collection: str = "docs") -> str:
    """The sources footer, as a pattern: billing.md linked to its passage page under
    RAG_PUBLIC_URL (a signed link: its token differs with the time it was made)."""
    link = re.escape(f"{PUBLIC_URL}passages/") + r"p1\.[\w-]+\.[\w-]+"
    return rf"\n\nSources: \[1\] \[billing\.md\]\({link}\)"


FOOTER = footer()


def answered(text: str, collection: str = "docs") -> bool:
    """The stub's answer, then the footer."""
    return re.fullmatch(re.escape(ANSWER) + footer(collection), text) is not None


# What AnythingLLM's Generic OpenAI provider sends (openai-node, chat.completions.create):
# its workspace system prompt (+ its own "Context:" block), the chat history, the new prompt.
ANYTHINGLLM_SYSTEM = (
    "Given the following conversation, relevant context, and a follow up question, reply with an "
    "answer to the current question the user is asking. Return only your response to the question "
    "given the above information following the users instructions as needed."
)


@pytest.fixture
def server(tmp_path, fake_ollama, fake_openai):
    kb = write_kb(tmp_path / "kb")
    ollama = {"provider": "ollama", "model": "llama3.2", "base_url": fake_ollama.url}
    relay = {"provider": "openai", "model": "gpt-4o-mini", "base_url": fake_openai.url + "/v1"}
    collections = {
        "docs": hash_collection(kb, llm=ollama),
        "relay": hash_collection(kb, llm=relay),
        "strict": hash_collection(kb, llm=ollama, retrieval={"threshold": 0.99}),
    }
    config = write_config(tmp_path / "collections.yaml", collections)
    # qdrant-client's in-memory engine: a fresh store per test in milliseconds
    settings = Settings(
        config=config, data_dir=tmp_path / "data", qdrant_url=":memory:", public_url=PUBLIC_URL
    )
    hub, live = start_indexed(settings, *collections)
    yield live
    live.stop()
    hub.close()


@pytest.fixture
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)


def test_chat_stream_forwards_ollama_tokens_as_they_arrive(client, fake_ollama):
    fake_ollama.reply, fake_ollama.token_delay = ANSWER, 0.05
    messages = [
        {"role": "system", "content": "You are Lumen's assistant."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": [{"type": "text", "text": REFUND}]},
    ]
    stream = client.chat.completions.create(
        model="docs", messages=messages, stream=True, temperature=0.3, max_tokens=64
    )
    chunks, sent_at_first_piece = [], None
    for chunk in stream:
        if sent_at_first_piece is None and chunk.choices[0].delta.content:
            sent_at_first_piece = fake_ollama.pieces_sent
        chunks.append(chunk)
    assert sent_at_first_piece < fake_ollama.pieces_total == len(ANSWER.split())
    assert answered("".join(c.choices[0].delta.content or "" for c in chunks))
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    assert final.model_extra["generator"] == "ollama"
    assert final.model_extra["sources"][0]["source"] == "billing.md"
    sent = fake_ollama.calls("/api/chat")[0].body
    system = sent["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You are Lumen's assistant.")
    assert "[1] (source: billing.md)" in system["content"]
    assert sent["messages"][1:] == [*messages[1:3], {"role": "user", "content": REFUND}]
    assert sent["options"] == {"temperature": 0.3, "num_predict": 64}


def test_openai_compatible_upstream_chat_and_responses(client, fake_openai):
    fake_openai.reply = ANSWER
    completion = client.chat.completions.create(
        model="relay", messages=[{"role": "user", "content": REFUND}]
    )
    assert answered(completion.choices[0].message.content, "relay")
    upstream = fake_openai.calls("/v1/chat/completions")[0].body
    prompt_words = sum(words(m["content"]) for m in upstream["messages"])
    assert completion.usage.prompt_tokens == prompt_words
    assert completion.usage.completion_tokens == len(ANSWER.split())
    assert upstream["model"] == "gpt-4o-mini" and upstream["stream"] is True

    fake_openai.token_delay = 0.05
    user = {"role": "user", "content": [{"type": "input_text", "text": REFUND}]}
    events = client.responses.create(
        model="relay", input=[user], instructions="Answer in one sentence.", stream=True
    )
    deltas, sent_at_first_delta = [], None
    for event in events:
        if event.type == "response.output_text.delta":
            if sent_at_first_delta is None:
                sent_at_first_delta = fake_openai.pieces_sent
            deltas.append(event.delta)
        done = event
    assert sent_at_first_delta < fake_openai.pieces_total
    assert "".join(deltas) == done.response.output_text
    assert answered(done.response.output_text, "relay")
    assert done.type == "response.completed"
    assert done.response.usage.output_tokens == len(ANSWER.split())
    system = fake_openai.calls("/v1/chat/completions")[1].body["messages"][0]["content"]
    assert system.startswith("Answer in one sentence.")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_client_disconnect_stops_the_upstream(client, fake_ollama, fake_openai, api):
    fake = fake_ollama if api == "chat" else fake_openai
    fake.reply, fake.token_delay = LONG_REPLY, 0.02
    if api == "chat":
        stream = client.chat.completions.create(
            model="docs", messages=[{"role": "user", "content": REFUND}], stream=True
        )
    else:
        stream = client.responses.create(model="relay", input=REFUND, stream=True)
    events = iter(stream)
    for _ in range(6):
        next(events)
    stream.close()
    assert fake.disconnected.wait(10), "the upstream was not closed"
    assert fake.disconnects == 1
    assert fake.pieces_sent < 60 < fake.pieces_total == 200


def test_llm_down_answers_extractively_and_says_so(client, fake_ollama):
    fake_ollama.stop()
    completion = client.chat.completions.create(
        model="docs", messages=[{"role": "user", "content": REFUND}]
    )
    text = completion.choices[0].message.content
    assert "refund within 30 days" in text and re.search(FOOTER + "$", text)
    assert completion.model_extra["generator"] == "extractive"
    assert "Ollama" in completion.model_extra["warning"]
    events = list(client.responses.create(model="docs", input=REFUND, stream=True))
    final = events[-1].response
    assert final.model_extra["generator"] == "extractive" and final.model_extra["warning"]
    assert "refund within 30 days" in final.output_text


def test_upstream_breaking_mid_answer_ends_the_stream_with_a_warning(client, fake_ollama):
    fake_ollama.reply, fake_ollama.token_delay = LONG_REPLY, 0.02
    stream = client.chat.completions.create(
        model="docs", messages=[{"role": "user", "content": REFUND}], stream=True
    )
    events = iter(stream)
    head = [next(events) for _ in range(3)]
    fake_ollama.stop()
    chunks = head + list(events)
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    assert "incomplete" in final.model_extra["warning"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks).startswith("word0 word1")


def test_no_evidence_answers_without_calling_the_llm(client, fake_ollama):
    completion = client.chat.completions.create(
        model="strict", messages=[{"role": "user", "content": REFUND}]
    )
    text = completion.choices[0].message.content
    assert text == "No relevant information was found to answer this question."
    assert completion.usage.total_tokens == 0
    assert completion.model_extra["sources"] == [] and completion.model_extra["generator"] == "none"
    response = client.responses.create(model="strict", input=REFUND)
    assert response.output_text == text and response.usage.total_tokens == 0
    assert fake_ollama.calls("/api/chat") == []


def test_anythingllm_generic_openai_request(server, fake_ollama):
    fake_ollama.reply = ANSWER
    context = "\nContext:\n[CONTEXT 0]:\nWorkspace note: refunds are handled by billing.\n[END CONTEXT 0]\n\n"
    body = {
        "model": "gpt-4o",
        "stream": True,
        "messages": [
            {"role": "system", "content": ANYTHINGLLM_SYSTEM + context},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": REFUND},
        ],
        "temperature": 0.7,
        "max_tokens": 1024,
    }
    headers = {
        "Authorization": "Bearer anything",
        "User-Agent": "OpenAI/JS 4.95.1",
        "X-Stainless-Lang": "js",
        "X-Stainless-Package-Version": "4.95.1",
    }
    with httpx.stream(
        "POST", server.url + "/v1/chat/completions", json=body, headers=headers
    ) as response:
        assert response.status_code == 200
        events = sse_events(response.iter_lines())
    # AnythingLLM reads choices[0].delta.content until the first chunk with a finish_reason
    text, sources = "", None
    for _, data in events:
        choice = data["choices"][0]
        text += choice["delta"].get("content") or ""
        if choice["finish_reason"] is not None:
            sources = data["sources"]
            break
    assert answered(text)
    assert sources[0]["source"] == "billing.md"
    assert events[-1] == (None, "[DONE]") and all(d["model"] == "gpt-4o" for _, d in events[:-1])
    sent = fake_ollama.calls("/api/chat")[0].body
    assert sent["messages"][0]["content"].startswith(ANYTHINGLLM_SYSTEM + "\nContext:")
    assert "[1] (source: billing.md)" in sent["messages"][0]["content"]
    assert sent["messages"][1:] == body["messages"][1:]
    assert sent["options"] == {"temperature": 0.7, "num_predict": 1024}
