"""Responses API objects from a Reply (rag_api.openai_compat.responses), on a collection of an
in-process hub and an answer stream the test writes: the finished `response` object (every echoed
request field, usage in the Responses shape, completed or incomplete, stored or not) and its SSE
event sequence (items opened, filled and closed in order: messages, function calls, an empty
answer's empty message), numbered from 0."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.llm.generators import Piece, ToolCallDelta, Usage
from rag_api.openai_compat.models import ResponsesRequest
from rag_api.openai_compat.responses import (
    message,
    output_text,
    response,
    response_events,
    usage,
)
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import RESPONSE_EVENTS, written_reply

PASSAGES = [Passage("1", "a.md", 0, 1.0, "Refunds take 30 days.", {})]
USAGE = {
    "input_tokens": 11,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 4,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection()})
    return open_hub(make_settings(config, "memory"))


def request(**fields) -> ResponsesRequest:
    return ResponsesRequest(**{"model": "rag/docs", "input": "Q?", **fields})


def events(hub: Hub, pieces: list[Piece], **fields) -> list[dict]:
    """The events' data, each checked against its `event:` line and its number."""
    frames = list(response_events(written_reply(hub, pieces, **fields), request()))
    parsed = []
    for n, text in enumerate(frames):
        event, data = text.removesuffix("\n\n").split("\n")
        fields = json.loads(data.removeprefix("data: "))
        assert event == f"event: {fields['type']}" and fields.pop("sequence_number") == n
        parsed.append(fields)
    return parsed


def test_usage_is_in_the_responses_shape_with_its_details() -> None:
    assert usage(Usage(11, 4)) == USAGE


def test_a_message_item_is_empty_in_progress_or_holds_its_text() -> None:
    assert message("msg_1", None, "in_progress") == {
        "type": "message",
        "id": "msg_1",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    assert message("msg_1", "", "completed")["content"] == [output_text("")]
    assert output_text("Hi") == {
        "type": "output_text",
        "text": "Hi",
        "annotations": [],
        "logprobs": [],
    }


def test_a_response_echoes_the_request_with_its_defaults(hub: Hub) -> None:
    before = int(time.time())
    body = response(written_reply(hub, ["Refunds ", "[1]."], PASSAGES), request())
    assert body.pop("id").startswith("resp_") and before <= body.pop("created_at") <= time.time()
    [item] = body.pop("output")
    assert item.pop("id").startswith("msg_")
    assert item == {
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [output_text("Refunds [1].\n\nSources: [1] a.md")],
    }
    assert body == {
        "object": "response",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "rag/docs",
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": None,
        "store": False,
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": USAGE,
        "user": None,
        "metadata": {},
        "sources": [PASSAGES[0].as_dict()],
        "generator": "ollama",
    }


def test_a_response_echoes_each_field_the_request_set(hub: Hub) -> None:
    tools = [{"type": "function", "name": "ticket", "parameters": {}}]
    fields = {
        "instructions": "Be brief.",
        "max_output_tokens": 50,
        "parallel_tool_calls": False,
        "previous_response_id": "resp_x",
        "temperature": 0.5,
        "text": {"format": {"type": "json_object"}},
        "tool_choice": "required",
        "tools": tools,
        "top_p": 0.3,
        "metadata": {"team": "a"},
    }
    body = response(written_reply(hub, ["{}"]), request(**fields))
    assert {key: body[key] for key in fields} == {
        **fields,
        "text": {"format": {"type": "json_object"}},
    }
    parallel = response(written_reply(hub, ["{}"]), request(parallel_tool_calls=True))
    assert parallel["parallel_tool_calls"] is True
    no_format = response(written_reply(hub, ["x"]), request(text={"verbosity": "low"}))
    assert no_format["text"] == {"format": {"type": "text"}}


def test_a_stored_response_is_kept_once_as_it_is_returned(hub: Hub) -> None:
    kept: list[dict] = []
    body = response(written_reply(hub, ["Hi"]), request(), kept.append)
    assert body["store"] is True and kept == [body]
    frames = list(response_events(written_reply(hub, ["Hi"]), request(), kept.append))
    last = json.loads(frames[-1].split("\n")[1].removeprefix("data: "))
    assert kept[1] == last["response"] and len(kept) == 2
    first = json.loads(frames[0].split("\n")[1].removeprefix("data: "))
    assert first["response"]["store"] is True


def test_an_answer_cut_by_the_token_limit_is_incomplete(hub: Hub) -> None:
    body = response(written_reply(hub, ["Cut"], finish_reason="length"), request())
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert body["output"][0]["status"] == "incomplete"
    kinds = [e["type"] for e in events(hub, ["Cut"], finish_reason="length")]
    assert kinds[-1] == "response.incomplete" and "response.completed" not in kinds


def test_a_text_answer_streams_its_message_opened_filled_and_closed(hub: Hub) -> None:
    sent = events(hub, ["Refunds ", "[1]."], passages=PASSAGES)
    text = "Refunds [1].\n\nSources: [1] a.md"
    created, progress, added, part, *deltas, done, part_done, item_done, completed = sent
    for start, kind in ((created, "response.created"), (progress, "response.in_progress")):
        assert start["type"] == kind
        assert start["response"]["status"] == "in_progress"
        assert start["response"]["output"] == [] and start["response"]["usage"] is None
        assert "sources" not in start["response"]
        assert start["response"]["incomplete_details"] is None
    item_id = added["item"]["id"]
    where = {"item_id": item_id, "output_index": 0}
    assert added == {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": message(item_id, None, "in_progress"),
    }
    assert part == {
        "type": "response.content_part.added",
        **where,
        "content_index": 0,
        "part": output_text(""),
    }
    assert deltas == [
        {
            "type": "response.output_text.delta",
            **where,
            "content_index": 0,
            "delta": piece,
            "logprobs": [],
        }
        for piece in ("Refunds ", "[1].", "\n\nSources: [1] a.md")
    ]
    assert done == {
        "type": "response.output_text.done",
        **where,
        "content_index": 0,
        "text": text,
        "logprobs": [],
    }
    assert part_done == {
        "type": "response.content_part.done",
        **where,
        "content_index": 0,
        "part": output_text(text),
    }
    assert item_done == {
        "type": "response.output_item.done",
        "output_index": 0,
        "item": message(item_id, text, "completed"),
    }
    assert completed["type"] == "response.completed"
    assert completed["response"]["output"] == [message(item_id, text, "completed")]
    assert completed["response"]["usage"] == USAGE
    assert created["response"]["id"] == completed["response"]["id"]


def test_an_empty_answer_still_has_its_empty_message(hub: Hub) -> None:
    sent = events(hub, [])
    assert [e["type"] for e in sent] == RESPONSE_EVENTS
    [item] = sent[-1]["response"]["output"]
    assert item == message(item["id"], "", "completed")


def test_tool_calls_stream_as_function_call_items_after_the_text(hub: Hub) -> None:
    pieces = [
        "Opening.",
        ToolCallDelta(0, id="call_1", name="ticket", arguments='{"n"'),
        ToolCallDelta(0, arguments=""),
        ToolCallDelta(0, arguments=": 1}"),
        ToolCallDelta(1, arguments="{}"),
        "Done.",
    ]
    sent = events(hub, pieces)
    kinds = [e["type"] for e in sent]
    message_events = RESPONSE_EVENTS[2:-1]  # an output message's, opened to closed
    call = ["response.output_item.added", "response.function_call_arguments.delta"]
    call_done = ["response.function_call_arguments.done", "response.output_item.done"]
    assert kinds == [
        *RESPONSE_EVENTS[:2],
        *message_events,
        *call,
        "response.function_call_arguments.delta",
        *call_done,
        *call,
        *call_done,
        *message_events,
        "response.completed",
    ]
    first_call = sent[8]["item"]
    assert first_call["id"].startswith("fc_")
    assert sent[8] == {
        "type": "response.output_item.added",
        "output_index": 1,
        "item": {
            "type": "function_call",
            "id": first_call["id"],
            "call_id": "call_1",
            "name": "ticket",
            "arguments": "",
            "status": "in_progress",
        },
    }
    where = {"item_id": first_call["id"], "output_index": 1}
    assert [sent[9], sent[10]] == [
        {"type": "response.function_call_arguments.delta", **where, "delta": '{"n"'},
        {"type": "response.function_call_arguments.delta", **where, "delta": ": 1}"},
    ]
    assert sent[11] == {
        "type": "response.function_call_arguments.done",
        **where,
        "arguments": '{"n": 1}',
        "name": "ticket",
    }
    done = {**first_call, "arguments": '{"n": 1}', "status": "completed"}
    assert sent[12] == {"type": "response.output_item.done", "output_index": 1, "item": done}
    second = sent[13]["item"]
    assert (second["call_id"], second["name"], sent[13]["output_index"]) == ("", "", 2)
    assert sent[17]["output_index"] == 3 and sent[18]["output_index"] == 3
    output = sent[-1]["response"]["output"]
    assert [item["type"] for item in output] == [
        "message",
        "function_call",
        "function_call",
        "message",
    ]
    assert output[1] == done and output[2]["status"] == "completed"
    assert output[2]["arguments"] == "{}"
    assert [output[0]["content"][0]["text"], output[3]["content"][0]["text"]] == [
        "Opening.",
        "Done.",
    ]
    assert sent[-1]["response"]["status"] == "completed"


def test_an_answer_of_only_a_call_has_no_message(hub: Hub) -> None:
    body = response(
        written_reply(hub, [ToolCallDelta(0, id="c", name="f", arguments="{}")]), request()
    )
    [item] = body["output"]
    assert item["type"] == "function_call" and item["status"] == "completed"
    assert (item["call_id"], item["name"], item["arguments"]) == ("c", "f", "{}")
