"""Chat completion objects from a Reply (rag_api.openai_compat.chat), on a collection of an
in-process hub and an answer stream the test writes: the whole `chat.completion` (text and the
sources footer, tool calls, usage, the hub's own fields) and its `chat.completion.chunk` stream
(the role first, a chunk a piece, the finish with the sources, usage when asked, then [DONE])."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rag_api.answering.frames import DONE
from rag_api.hub import Hub
from rag_api.llm.generators import ToolCallDelta
from rag_api.openai_compat.chat import completion, completion_chunks
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import written_reply

PASSAGES = [Passage("1", "a.md", 0, 1.0, "Refunds take 30 days.", {})]
USAGE = {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
CALL = [
    ToolCallDelta(0, id="call_1", name="ticket", arguments='{"n"'),
    ToolCallDelta(0, arguments=": 1}"),
]


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection()})
    return open_hub(make_settings(config, "memory"))


def events(chunks: list[str]) -> list[dict]:
    assert chunks[-1] == DONE
    assert all(c.startswith("data: ") and c.endswith("\n\n") for c in chunks)
    return [json.loads(c.removeprefix("data: ")) for c in chunks[:-1]]


def test_a_completion_is_the_whole_answer_with_its_footer_usage_and_sources(hub: Hub) -> None:
    before = int(time.time())
    answer = completion(written_reply(hub, ["Refunds take ", "30 days [1]."], PASSAGES))
    assert answer["id"].startswith("chatcmpl-") and len(answer["id"]) == len("chatcmpl-") + 32
    assert before <= answer["created"] <= int(time.time())
    head = {"object": "chat.completion", "model": "rag/docs", "system_fingerprint": None}
    assert {k: answer[k] for k in head} == head
    assert answer["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Refunds take 30 days [1].\n\nSources: [1] a.md",
                "refusal": None,
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert answer["usage"] == USAGE
    assert answer["sources"] == [PASSAGES[0].as_dict()]
    assert answer["generator"] == "ollama"
    assert "warning" not in answer and "routing" not in answer


def test_a_completion_carries_the_retrieval_warning_and_routing(hub: Hub) -> None:
    answer = completion(
        written_reply(
            hub, ["Cut"], finish_reason="length", retrieval_warning="slow", routing={"a": 1}
        )
    )
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["choices"][0]["message"]["content"] == "Cut"
    assert answer["warning"] == "slow" and answer["routing"] == {"a": 1}
    assert answer["sources"] == []


def test_a_completion_with_tool_calls_has_them_whole_and_no_empty_content(hub: Hub) -> None:
    answer = completion(written_reply(hub, CALL, PASSAGES))
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "ticket", "arguments": '{"n": 1}'},
    }
    assert answer["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]},
        "logprobs": None,
        "finish_reason": "tool_calls",
    }
    said = completion(written_reply(hub, ["Opening one.", *CALL]))["choices"][0]["message"]
    assert said["content"] == "Opening one." and said["tool_calls"] == [call]


def test_an_empty_answer_is_empty_content_not_null(hub: Hub) -> None:
    message = completion(written_reply(hub, []))["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "", "refusal": None}


def test_the_stream_is_the_role_each_piece_the_finish_with_sources_then_done(hub: Hub) -> None:
    before = int(time.time())
    chunks = events(
        list(completion_chunks(written_reply(hub, ["Refunds ", "[1]."], PASSAGES), False))
    )
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and ids.pop().startswith("chatcmpl-")
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == "rag/docs"
        assert chunk["system_fingerprint"] is None and "usage" not in chunk
        assert before <= chunk["created"] <= int(time.time())
    choice = {"index": 0, "logprobs": None, "finish_reason": None}
    deltas = [{"content": text} for text in ("Refunds ", "[1].", "\n\nSources: [1] a.md")]
    assert [c["choices"] for c in chunks] == [
        [{**choice, "delta": {"role": "assistant", "content": ""}}],
        *([{**choice, "delta": delta}] for delta in deltas),
        [{**choice, "delta": {}, "finish_reason": "stop"}],
    ]
    assert chunks[-1]["sources"] == [PASSAGES[0].as_dict()]
    assert chunks[-1]["generator"] == "ollama"
    assert all("sources" not in c for c in chunks[:-1])


def test_with_include_usage_every_chunk_has_usage_null_and_a_last_one_has_it(hub: Hub) -> None:
    chunks = events(list(completion_chunks(written_reply(hub, ["Hi"]), True)))
    assert [c["usage"] for c in chunks] == [None, None, None, USAGE]
    assert chunks[-1]["choices"] == [] and chunks[-1]["object"] == "chat.completion.chunk"
    assert chunks[-1]["id"] == chunks[0]["id"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_tool_calls_stream_as_openais_delta_pieces_then_finish_as_tool_calls(hub: Hub) -> None:
    chunks = events(list(completion_chunks(written_reply(hub, CALL, PASSAGES), False)))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "function": {"arguments": '{"n"', "name": "ticket"},
                    "id": "call_1",
                    "type": "function",
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
        {},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
