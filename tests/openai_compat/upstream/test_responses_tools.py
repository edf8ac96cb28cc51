"""Responses API function tools: forwarded to the LLM in chat form, its calls returned as
`function_call` items (streamed as the Responses API streams them), and the follow-up carrying
`function_call_output` works, continued with `previous_response_id` or with the whole input."""

from __future__ import annotations

import json

import openai
import pytest

from tests.support.openai_support import REFUND, TOOLS

pytestmark = pytest.mark.usefixtures("calling")
TOOL = {"type": "function", **TOOLS[0]["function"]}  # the Responses API's flat form


def first_turn(client, model: str, stream: bool):
    """The call a first turn answers with, and (streamed) the event types seen."""
    if not stream:
        done = client.responses.create(model=model, input=REFUND, tools=[TOOL], tool_choice="auto")
        return done, []
    events = list(
        client.responses.create(
            model=model, input=REFUND, tools=[TOOL], tool_choice="auto", stream=True
        )
    )
    return events[-1].response, events


@pytest.mark.parametrize("model", ["relay", "docs"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("follow_up", ["previous_response_id", "whole input"])
def test_a_two_turn_function_call_exchange(client, upstreams, model, stream, follow_up):
    fake = upstreams[1] if model == "relay" else upstreams[0]
    path = "/v1/chat/completions" if model == "relay" else "/api/chat"
    done, events = first_turn(client, model, stream)
    [call] = done.output
    assert (call.type, call.name, json.loads(call.arguments)) == (
        "function_call",
        "open_ticket",
        {"days": 30},
    )
    assert call.call_id.startswith("call_") and call.status == "completed"
    assert done.model_extra["sources"][0]["source"] == "billing.md"
    first = fake.calls(path)[-1].body
    assert first["tools"] == TOOLS  # in the upstream's chat form
    assert "[1] (source: billing.md)" in first["messages"][0]["content"]
    if stream:
        kinds = [event.type for event in events]
        assert kinds[:3] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
        ]
        assert "response.function_call_arguments.delta" in kinds
        assert kinds[-4:] == [
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
        deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
        assert "".join(deltas) == events[-3].arguments == call.arguments
        assert events[2].item.type == "function_call" and events[2].item.id == call.id

    result = {"type": "function_call_output", "call_id": call.call_id, "output": "T-42 opened"}
    if follow_up == "previous_response_id":
        reply = client.responses.create(
            model=model, previous_response_id=done.id, input=[result], tools=[TOOL]
        )
        assert reply.previous_response_id == done.id
    else:
        whole = [{"role": "user", "content": REFUND}, call.model_dump(exclude_none=True), result]
        reply = client.responses.create(model=model, input=whole, tools=[TOOL], store=False)
    assert reply.output_text.startswith("Ticket opened for 30 days [1].")
    assert reply.model_extra["sources"][0]["source"] == "billing.md"  # retrieved for the question
    sent = fake.calls(path)[-1].body["messages"]
    assert "[1] (source: billing.md)" in sent[0]["content"]
    assert sent[1] == {"role": "user", "content": REFUND}
    if model == "relay":
        assert sent[2:] == [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": "open_ticket", "arguments": call.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.call_id, "content": "T-42 opened"},
        ]
    else:  # Ollama's form
        assert sent[2]["tool_calls"] == [
            {"function": {"name": "open_ticket", "arguments": {"days": 30}}}
        ]
        assert (sent[3]["role"], sent[3]["tool_name"]) == ("tool", "open_ticket")


def test_a_named_tool_choice_reaches_the_upstream_in_chat_form(client, upstreams):
    _, relay = upstreams
    done = client.responses.create(
        model="relay",
        input=REFUND,
        tools=[TOOL],
        tool_choice={"type": "function", "name": "open_ticket"},
        parallel_tool_calls=False,
    )
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "open_ticket"}}
    assert sent["parallel_tool_calls"] is False
    assert done.tool_choice.name == "open_ticket" and done.tools[0].name == "open_ticket"


@pytest.mark.parametrize(
    ("model", "extra", "param"),
    [
        ("plain", {"tools": [TOOL], "tool_choice": "required"}, "tool_choice"),
        (
            "plain",
            {"tools": [TOOL], "tool_choice": {"type": "function", "name": "open_ticket"}},
            "tool_choice",
        ),
        ("docs", {"tools": [TOOL], "tool_choice": "required"}, "tool_choice"),  # Ollama
        ("relay", {"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ("relay", {"tools": [{"type": "function"}]}, "tools[0].name"),
        ("relay", {"tools": [TOOL], "tool_choice": {"type": "mcp"}}, "tool_choice"),
    ],
)
def test_what_cannot_be_done_is_refused_by_name(client, model, extra, param):
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model=model, input=REFUND, **extra)
    assert info.value.param == param


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_the_extractive_generator_answers_plainly_when_a_call_is_optional(client, choice):
    done = client.responses.create(model="plain", input=REFUND, tools=[TOOL], tool_choice=choice)
    assert [item.type for item in done.output] == ["message"]
    assert "30 days" in done.output_text
