"""The request bodies of /v1/chat/completions and /v1/responses (rag_api.openai_compat.models):
what each refuses and in which words (n > 1, log probabilities, audio, other modalities, stop
sequences past OpenAI's limits, unknown formats and tool choices), what asks for nothing and
passes, and the options each forwards to the LLM."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rag_api.errors import InvalidRequest
from rag_api.llm.generators import Options
from rag_api.openai_compat.models import (
    NO_LOGPROBS,
    ChatMessage,
    ChatRequest,
    ResponsesRequest,
)

HI = [{"role": "user", "content": "Hi"}]
TOOL = {"type": "function", "function": {"name": "ticket"}}


def chat(**fields) -> ChatRequest:
    return ChatRequest(**{"model": "docs", "messages": HI, **fields})


def responses(**fields) -> ResponsesRequest:
    return ResponsesRequest(**{"model": "docs", "input": "Hi", **fields})


def refusal(make, **fields) -> str:
    with pytest.raises(ValidationError) as refused:
        make(**fields)
    [error] = refused.value.errors()
    return error["msg"].removeprefix("Value error, ")


@pytest.mark.parametrize("content", [None, "text", [{"type": "text", "text": "x"}], []])
def test_a_message_content_is_text_parts_or_nothing(content) -> None:
    assert ChatMessage(role="user", content=content).content == content


@pytest.mark.parametrize("content", [7, {"type": "text"}])
def test_any_other_message_content_is_refused(content) -> None:
    assert refusal(ChatMessage, role="user", content=content) == (
        "must be a string or a list of content parts"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("logprobs", None),
        ("logprobs", False),
        ("audio", None),
        ("audio", {}),
        ("audio", []),
        ("audio", 0),
        ("n", None),
        ("n", 1),
        ("modalities", ["text"]),
        ("modalities", []),
        ("modalities", None),
        ("top_logprobs", 0),
        ("top_logprobs", None),
    ],
)
def test_a_chat_field_that_asks_for_nothing_passes(field: str, value) -> None:
    assert getattr(chat(**{field: value}), field) == value


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("logprobs", True, NO_LOGPROBS),
        ("top_logprobs", 2, NO_LOGPROBS),
        (
            "audio",
            {"voice": "alloy"},
            "is not supported: the hub answers in text only (modalities: ['text'])",
        ),
        ("n", 2, "must be 1, got 2: the hub gives one answer per request"),
        ("n", 0, "must be 1, got 0: the hub gives one answer per request"),
        (
            "modalities",
            ["text", "image", "audio"],
            "['audio', 'image'] is not supported: the hub answers in text only",
        ),
        ("response_format", {"type": "xml"}, "type must be 'text', 'json_object' or 'json_schema'"),
        ("response_format", {}, "type must be 'text', 'json_object' or 'json_schema'"),
        ("tool_choice", "always", "must be 'auto', 'none', 'required' or a named tool"),
    ],
)
def test_a_chat_field_the_hub_cannot_honour_is_refused_in_words(field, value, message) -> None:
    assert refusal(chat, **{field: value}) == message


@pytest.mark.parametrize("stop", [None, "END", ["a", "b", "c", "d"], ["x" * 256], []])
def test_stop_takes_a_string_or_up_to_four_of_one_to_256_characters(stop) -> None:
    assert chat(stop=stop).stop == stop


@pytest.mark.parametrize(
    ("stop", "message"),
    [
        (7, "must be a string or a list of strings"),
        (["a", 7], "must be a string or a list of strings"),
        (("a",), "must be a string or a list of strings"),
        (["a", "b", "c", "d", "e"], "takes at most 4 sequences, got 5"),
        ([""], "each sequence must be 1 to 256 characters"),
        ("", "each sequence must be 1 to 256 characters"),
        (["x" * 257], "each sequence must be 1 to 256 characters"),
    ],
)
def test_stop_sequences_past_openais_limits_are_refused(stop, message: str) -> None:
    assert refusal(chat, stop=stop) == message


@pytest.mark.parametrize(
    ("fields", "limit"),
    [
        ({}, None),
        ({"max_tokens": 10}, 10),
        ({"max_completion_tokens": 20}, 20),
        ({"max_tokens": 10, "max_completion_tokens": 20}, 20),
    ],
)
def test_the_token_limit_is_max_completion_tokens_else_max_tokens(fields, limit) -> None:
    assert chat(**fields).token_limit == limit


def test_usage_is_included_only_when_stream_options_ask() -> None:
    assert chat().include_usage is False
    assert chat(stream_options={}).include_usage is False
    assert chat(stream_options={"include_usage": True}).include_usage is True


def test_a_chat_request_forwards_its_options_as_sent() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    asked = chat(
        top_p=0.5,
        stop=["END", "STOP"],
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=-0.2,
        tools=[TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        response_format=schema,
    )
    assert asked.options() == Options(
        top_p=0.5,
        stop=("END", "STOP"),
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=-0.2,
        tools=(TOOL,),
        tool_choice="required",
        parallel_tool_calls=False,
        response_format=schema,
    )
    assert chat(stop="END").options().stop == ("END",)
    assert chat().options() == Options()
    assert chat(response_format={"type": "text"}).options().response_format is None
    assert chat(response_format={"type": "json_object"}).options().response_format == {
        "type": "json_object"
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("input", 7, "must be a string or a list of messages"),
        ("input", {"role": "user"}, "must be a string or a list of messages"),
        (
            "text",
            {"format": {"type": "xml"}},
            "format.type must be 'text', 'json_object' or 'json_schema'",
        ),
        (
            "include",
            ["message.output_text.logprobs"],
            f"['message.output_text.logprobs'] {NO_LOGPROBS}",
        ),
        ("top_logprobs", 3, NO_LOGPROBS),
    ],
)
def test_a_responses_field_the_hub_cannot_honour_is_refused_in_words(field, value, message) -> None:
    assert refusal(responses, **{field: value}) == message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("input", [{"role": "user", "content": "Hi"}]),
        ("text", None),
        ("text", {}),
        ("text", {"format": None}),
        ("text", {"format": {}}),
        ("text", {"format": {"type": "text"}}),
        ("text", {"format": {"type": "json_object"}}),
        ("text", {"format": {"type": "json_schema", "name": "x"}}),
        ("include", ["file_search_call.results"]),
        ("include", None),
        ("include", []),
    ],
)
def test_a_responses_field_that_asks_for_something_it_can_do_passes(field, value) -> None:
    assert getattr(responses(**{field: value}), field) == value


@pytest.mark.parametrize(
    ("text", "response_format"),
    [
        (None, None),
        ({"format": None}, None),
        ({"format": {"type": "text"}}, None),
        ({"format": {"type": "json_object"}}, {"type": "json_object"}),
        (
            {"format": {"type": "json_schema", "name": "x", "schema": {}, "strict": True}},
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": True}},
        ),
    ],
)
def test_text_format_is_chats_response_format(text, response_format) -> None:
    asked = responses(text=text)
    assert asked.response_format == response_format
    assert asked.text == text


def test_a_responses_request_forwards_its_options_in_chat_form() -> None:
    flat = {"type": "function", "name": "ticket", "parameters": {"type": "object"}}
    asked = responses(
        top_p=0.2,
        tools=[flat],
        tool_choice={"type": "function", "name": "ticket"},
        parallel_tool_calls=True,
        text={"format": {"type": "json_object"}},
    )
    assert asked.options() == Options(
        top_p=0.2,
        tools=(
            {"type": "function", "function": {"name": "ticket", "parameters": {"type": "object"}}},
        ),
        tool_choice={"type": "function", "function": {"name": "ticket"}},
        parallel_tool_calls=True,
        response_format={"type": "json_object"},
    )
    assert responses().options() == Options()


def test_a_responses_tool_the_hub_cannot_run_is_refused_by_options() -> None:
    with pytest.raises(InvalidRequest) as refused:
        responses(tools=[{"type": "web_search"}]).options()
    assert refused.value.param == "tools[0].type"
