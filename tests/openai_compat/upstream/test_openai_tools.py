"""Tools and structured output pass through to LLMs that take them (an OpenAI-compatible upstream,
Ollama), with the retrieved passages in the system context as for any question; the extractive
generator refuses what it cannot do by name and answers plainly when a tool call is optional."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.support.openai_support import REFUND, TOOLS, ask

pytestmark = pytest.mark.usefixtures("calling")

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "refund",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"days": {"type": "integer"}},
            "required": ["days"],
            "additionalProperties": False,
        },
    },
}


def streamed_calls(chunks) -> tuple[list[dict], str | None]:
    calls: dict[int, dict] = {}
    finish = None
    for chunk in chunks:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for piece in choice.delta.tool_calls or ():
                call = calls.setdefault(piece.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = piece.id or call["id"]
                call["name"] += (piece.function.name or "") if piece.function else ""
                call["arguments"] += (piece.function.arguments or "") if piece.function else ""
    return [calls[i] for i in sorted(calls)], finish


@pytest.mark.parametrize("model", ["relay", "docs"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_two_turn_tool_exchange(client, upstreams, model, stream):
    fake = upstreams[1] if model == "relay" else upstreams[0]
    path = "/v1/chat/completions" if model == "relay" else "/api/chat"
    reply = client.chat.completions.create(
        model=model, messages=ask(REFUND), tools=TOOLS, tool_choice="auto", stream=stream
    )
    if stream:
        calls, finish = streamed_calls(list(reply))
    else:
        message = reply.choices[0].message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls
        ]
        finish = reply.choices[0].finish_reason
        assert message.content is None  # no footer around a tool call
        assert reply.model_extra["sources"][0]["source"] == "billing.md"
    assert finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("open_ticket", {"days": 30})
    ]
    assert calls[0]["id"].startswith("call_")
    first = fake.calls(path)[-1].body
    assert first["tools"] == TOOLS
    assert "[1] (source: billing.md)" in first["messages"][0]["content"]

    follow_up = [
        *ask(REFUND),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": calls[0]["id"],
                    "type": "function",
                    "function": {"name": "open_ticket", "arguments": calls[0]["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "ticket T-42 opened"},
    ]
    done = client.chat.completions.create(model=model, messages=follow_up, tools=TOOLS)
    assert done.choices[0].message.content.startswith("Ticket opened for 30 days [1].")
    assert done.choices[0].finish_reason == "stop"
    assert done.model_extra["sources"][0]["source"] == "billing.md"  # retrieved for the question
    sent = fake.calls(path)[-1].body["messages"]
    assert "[1] (source: billing.md)" in sent[0]["content"]
    assert sent[1] == {"role": "user", "content": REFUND}
    if model == "relay":  # forwarded as the client sent them
        assert sent[2:] == follow_up[1:]
    else:  # Ollama's form: arguments as an object, the result named by its function
        assert sent[2]["tool_calls"] == [
            {"function": {"name": "open_ticket", "arguments": {"days": 30}}}
        ]
        assert (sent[3]["role"], sent[3]["content"], sent[3]["tool_name"]) == (
            "tool",
            "ticket T-42 opened",
            "open_ticket",
        )


def test_tool_choice_and_parallel_calls_reach_an_openai_compatible_upstream(client, upstreams):
    _, relay = upstreams
    named = {"type": "function", "function": {"name": "open_ticket"}}
    client.chat.completions.create(
        model="relay",
        messages=ask(REFUND),
        tools=TOOLS,
        tool_choice=named,
        parallel_tool_calls=False,
    )
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert (sent["tool_choice"], sent["parallel_tool_calls"]) == (named, False)


@pytest.mark.parametrize("model", ["relay", "docs"])
def test_a_json_schema_round_trip(client, upstreams, model):
    fake = upstreams[1] if model == "relay" else upstreams[0]
    fake.reply = '{"days": 30}'
    reply = client.chat.completions.create(
        model=model, messages=ask(REFUND), response_format=SCHEMA
    )
    assert json.loads(reply.choices[0].message.content) == {"days": 30}  # no footer inside
    assert reply.model_extra["sources"][0]["source"] == "billing.md"  # beside the JSON
    if model == "relay":
        sent = fake.calls("/v1/chat/completions")[-1].body
        assert sent["response_format"] == SCHEMA
    else:
        sent = fake.calls("/api/chat")[-1].body
        assert sent["format"] == SCHEMA["json_schema"]["schema"]
        client.chat.completions.create(
            model=model, messages=ask(REFUND), response_format={"type": "json_object"}
        )
        assert fake.calls("/api/chat")[-1].body["format"] == "json"


REFUSED = [  # (model, extra fields, the parameter named)
    ("plain", {"response_format": {"type": "json_object"}}, "response_format"),
    ("plain", {"response_format": SCHEMA}, "response_format"),
    ("plain", {"tools": TOOLS, "tool_choice": "required"}, "tool_choice"),
    (
        "plain",
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "open_ticket"}}},
        "tool_choice",
    ),
    ("docs", {"tools": TOOLS, "tool_choice": "required"}, "tool_choice"),  # Ollama cannot force
    ("plain", {"tool_choice": "sometimes"}, "tool_choice"),
    ("plain", {"response_format": {"type": "yaml"}}, "response_format"),
]


@pytest.mark.parametrize(("model", "extra", "param"), REFUSED)
def test_what_the_generator_cannot_do_is_refused_by_name(server, model, extra, param):
    body = {"model": model, "messages": ask(REFUND), **extra}
    response = httpx.post(server.url + "/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_the_extractive_generator_answers_plainly_when_a_call_is_optional(client, choice):
    reply = client.chat.completions.create(
        model="plain", messages=ask(REFUND), tools=TOOLS, tool_choice=choice
    )
    message = reply.choices[0].message
    assert message.tool_calls is None and "30 days" in message.content
    assert reply.choices[0].finish_reason == "stop"
    text = client.chat.completions.create(
        model="plain", messages=ask(REFUND), response_format={"type": "text"}
    )
    assert "30 days" in text.choices[0].message.content


def test_responses_text_format_goes_to_the_llm(client, upstreams):
    _, relay = upstreams
    relay.reply = '{"days": 30}'
    fmt = {"type": "json_schema", **SCHEMA["json_schema"]}
    done = client.responses.create(model="relay", input=REFUND, text={"format": fmt})
    assert json.loads(done.output_text) == {"days": 30}
    assert done.model_extra["sources"][0]["source"] == "billing.md"
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert sent["response_format"] == SCHEMA
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(
            model="plain", input=REFUND, text={"format": {"type": "json_object"}}
        )
    assert info.value.param == "text.format"
