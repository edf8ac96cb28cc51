"""The parts of rag_api.openai_compat.conversation one by one: content flattening (every text,
silent and unknown part type, the path an error names), chat messages to a conversation (system
texts, history, the question, a tool exchange after it), and Responses input items to chat
messages (function calls grouped, their outputs as tool results, loose parts as one user turn)."""

from __future__ import annotations

import pytest

from rag_api.errors import InvalidRequest
from rag_api.openai_compat.conversation import (
    SILENT_PARTS,
    TEXT_PARTS,
    Conversation,
    flatten,
    from_chat,
    from_responses,
    input_items,
    input_messages,
)
from rag_api.openai_compat.models import ChatMessage

CALL = {"id": "call_1", "type": "function", "function": {"name": "ticket", "arguments": "{}"}}
SUPPORTED = (
    "file, image_url, input_audio, input_file, input_image, input_text, output_text, refusal, text"
)


def said(*pairs: tuple[str, object]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content) for role, content in pairs]


def test_a_conversations_messages_are_its_system_history_question_and_tool_exchange() -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    after = [{"role": "tool", "tool_call_id": "c", "content": "done"}]
    conversation = Conversation("Q?", history, "Be brief.", after)
    assert conversation.messages() == [
        {"role": "system", "content": "Be brief."},
        *history,
        {"role": "user", "content": "Q?"},
        *after,
    ]
    assert Conversation("Q?", [], None).messages() == [{"role": "user", "content": "Q?"}]
    assert Conversation("Q?", [], "").messages() == [{"role": "user", "content": "Q?"}]
    assert Conversation("Q?", [], None).after == []


def test_the_previous_question_is_the_last_user_turn_of_the_history() -> None:
    history = [
        {"role": "user", "content": "First"},
        {"role": "assistant", "content": "One"},
        {"role": "user", "content": "Second"},
        {"role": "assistant", "content": "Two"},
        {"role": "user", "content": "Third"},
    ]
    assert Conversation("Q?", history, None).previous_question() == "Third"
    assistant_only = [{"role": "assistant", "content": "Welcome"}]
    assert Conversation("Q?", assistant_only, None).previous_question() is None
    assert Conversation("Q?", [], None).previous_question() is None


@pytest.mark.parametrize("kind", sorted(TEXT_PARTS))
def test_every_text_part_type_gives_its_text(kind: str) -> None:
    assert flatten({"type": kind, "text": "words"}, "m") == "words"


@pytest.mark.parametrize("kind", sorted(SILENT_PARTS))
def test_a_part_without_text_is_skipped_whatever_it_holds(kind: str) -> None:
    assert flatten({"type": kind, "text": "hidden"}, "m") == ""
    assert flatten(["a", {"type": kind}, "b"], "m") == "a\nb"


def test_contents_flatten_recursively_skipping_the_empty() -> None:
    assert flatten(None, "m") == ""
    assert flatten("plain", "m") == "plain"
    assert flatten(["a", "", None, ["b", {"content": "c"}], {"text": {"text": "d"}}], "m") == (
        "a\nb\nc\nd"
    )
    assert flatten({"text": "first", "content": "second"}, "m") == "first"
    assert flatten({"type": None, "content": "untyped"}, "m") == "untyped"
    assert flatten([], "m") == ""


@pytest.mark.parametrize(
    ("value", "param", "message"),
    [
        (
            [{"type": "video"}],
            "m[0].type",
            f"m[0].type: unsupported content part type 'video' (supported: {SUPPORTED})",
        ),
        (["x", {"kind": "text"}], "m[1]", "m[1]: a text part needs a 'text' field"),
        ({"text": 7}, "m.text", "m.text: expected text or content parts, got int"),
        (
            {"content": [3.5]},
            "m.content[0]",
            "m.content[0]: expected text or content parts, got float",
        ),
    ],
)
def test_a_content_it_cannot_read_names_where_it_is(value, param: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        flatten(value, "m")
    assert refused.value.param == param
    assert refused.value.message == message


def test_chat_messages_make_system_history_and_the_last_user_question() -> None:
    conversation = from_chat(
        said(
            ("system", "  Be brief. "),
            ("user", " Hi "),
            ("assistant", "   "),
            ("assistant", "Hello"),
            ("developer", "Use English."),
            ("tool", "a tool result before the question"),
            ("user", "   "),
            ("user", [{"type": "text", "text": " Q? "}]),
            ("assistant", "an answer after it"),
            ("user", ""),
        ),
        system=" Instructions. ",
    )
    assert conversation == Conversation(
        "Q?",
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "Instructions.\n\nBe brief.\n\nUse English.",
    )


def test_without_any_system_text_the_system_is_none() -> None:
    assert from_chat(said(("system", "  "), ("user", "Q?"))).system is None
    assert from_chat(said(("user", "Q?")), system="").system is None


def test_a_tool_exchange_after_the_question_follows_it() -> None:
    messages = [
        *said(("user", "Earlier"), ("assistant", "Yes"), ("user", "Open a ticket")),
        ChatMessage(role="assistant", tool_calls=[CALL]),
        ChatMessage(role="tool", tool_call_id="call_1", content=[{"type": "text", "text": "#42"}]),
        ChatMessage(role="assistant", content="Opening", tool_calls=[CALL]),
        ChatMessage(role="tool", content="no id"),
        ChatMessage(role="system", content="not part of the exchange"),
        ChatMessage(role="assistant", content="Done"),
    ]
    conversation = from_chat(messages)
    assert conversation.question == "Open a ticket"
    assert conversation.history == [
        {"role": "user", "content": "Earlier"},
        {"role": "assistant", "content": "Yes"},
    ]
    assert conversation.after == [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "#42"},
        {"role": "assistant", "content": "Opening", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "", "content": "no id"},
        {"role": "assistant", "content": "Done"},
    ]
    assert conversation.system == "not part of the exchange"


def test_answers_after_the_question_without_tools_are_no_exchange() -> None:
    conversation = from_chat(said(("user", "Q?"), ("assistant", "A"), ("system", "S")))
    assert conversation.after == [] and conversation.history == []
    only_a_tool = from_chat([*said(("user", "Q?")), ChatMessage(role="tool", content="r")])
    assert only_a_tool.after == [{"role": "tool", "tool_call_id": "", "content": "r"}]


@pytest.mark.parametrize(
    "messages",
    [
        said(("assistant", "Only an answer.")),
        said(("system", "Be brief."), ("user", "  "), ("tool", "x")),
    ],
)
def test_no_user_text_is_refused_naming_the_messages(messages) -> None:
    with pytest.raises(InvalidRequest) as refused:
        from_chat(messages, param="msgs")
    assert refused.value.param == "msgs"
    assert refused.value.message == "msgs: there is no user message with text to answer"


def test_a_chat_content_error_names_its_message() -> None:
    with pytest.raises(InvalidRequest) as refused:
        from_chat(said(("user", "Hi"), ("user", [{"type": "video"}])))
    assert refused.value.param == "messages[1].content[0].type"


def test_a_string_input_is_one_user_message() -> None:
    assert input_items("Q?") == [{"role": "user", "content": "Q?"}]
    items = ({"role": "user", "content": "Q?"},)
    assert input_items(items) == [{"role": "user", "content": "Q?"}]
    assert list(input_messages("Q?", "input")) == [ChatMessage(role="user", content="Q?")]


def test_function_calls_group_into_one_assistant_turn_and_outputs_are_tool_results() -> None:
    items = [
        {"type": "input_text", "text": "Open a ticket"},
        {"type": "input_text", "text": "please"},
        {"type": "function_call", "call_id": "c1", "name": "ticket", "arguments": "{}"},
        {"type": "function_call", "id": "fc2", "name": "page", "arguments": '{"n": 1}'},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "text", "text": "#42"}],
        },
        {"type": "function_call_output", "output": "paged"},
        {"type": "function_call", "name": "close"},
        "loose text",
        {"role": "developer", "content": "Be kind."},
        {"type": "message", "role": "assistant", "content": None},
        {"type": "function_call", "call_id": "c3", "name": "last", "arguments": ""},
    ]
    assert list(input_messages(items, "input")) == [
        ChatMessage(role="user", content="Open a ticket\nplease"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "ticket", "arguments": "{}"},
                },
                {
                    "id": "fc2",
                    "type": "function",
                    "function": {"name": "page", "arguments": '{"n": 1}'},
                },
            ],
        ),
        ChatMessage(role="tool", tool_call_id="c1", content="#42"),
        ChatMessage(role="tool", tool_call_id="", content="paged"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                {"id": "", "type": "function", "function": {"name": "close", "arguments": ""}}
            ],
        ),
        ChatMessage(role="user", content="loose text"),
        ChatMessage(role="developer", content="Be kind."),
        ChatMessage(role="assistant", content=""),
        ChatMessage(
            role="assistant",
            tool_calls=[
                {"id": "c3", "type": "function", "function": {"name": "last", "arguments": ""}}
            ],
        ),
    ]


def test_loose_parts_after_a_message_are_a_user_turn_of_their_own() -> None:
    items = [{"role": "user", "content": "First"}, "second", ["third"]]
    assert list(input_messages(items, "input")) == [
        ChatMessage(role="user", content="First"),
        ChatMessage(role="user", content="second\nthird"),
    ]


@pytest.mark.parametrize(
    ("item", "param", "message"),
    [
        (
            {"role": "tool", "content": "x"},
            "input[1].role",
            "input[1].role: must be one of assistant, developer, system, user, got 'tool'",
        ),
        (
            {"type": "message", "content": "x"},
            "input[1].role",
            "input[1].role: must be one of assistant, developer, system, user, got None",
        ),
        (
            {"type": "function_call_output", "output": {"type": "video"}},
            "input[1].output.type",
            f"input[1].output.type: unsupported content part type 'video' (supported: {SUPPORTED})",
        ),
        (
            {"role": "user", "content": {"type": "video"}},
            "input[1].content.type",
            f"input[1].content.type: unsupported content part type 'video' (supported: {SUPPORTED})",
        ),
        (
            {"type": "function_call", "arguments": "{}"},
            "input[1]",
            "input[1]: a function_call needs a 'name' and 'arguments' (a JSON string)",
        ),
    ],
)
def test_an_item_it_cannot_read_names_where_it_is(item, param: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        list(input_messages([{"role": "user", "content": "Hi"}, item], "input"))
    assert refused.value.param == param
    assert refused.value.message == message


def test_a_response_continues_its_earlier_items_with_the_instructions_as_system() -> None:
    earlier = [
        {"role": "user", "content": "First?"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "One"}],
        },
    ]
    conversation = from_responses("Second?", " Be brief. ", earlier)
    assert conversation == Conversation(
        "Second?",
        [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "One"}],
        "Be brief.",
    )
    assert from_responses("Q?", None).system is None


def test_a_response_names_the_earlier_item_or_the_input_it_cannot_read() -> None:
    with pytest.raises(InvalidRequest) as refused:
        from_responses("Q?", None, [{"role": "nobody"}])
    assert refused.value.param == "previous_response_id[0].role"
    with pytest.raises(InvalidRequest) as refused:
        from_responses([{"role": "user", "content": [{"type": "video"}]}], None, [])
    assert refused.value.param == "input[0].content[0].type"
    with pytest.raises(InvalidRequest) as refused:
        from_responses(["Hi", 3], None)
    assert refused.value.param == "input[1]"
    assert refused.value.message == "input[1]: expected text or content parts, got int"
    with pytest.raises(InvalidRequest) as refused:
        from_responses([{"role": "assistant", "content": "A"}], None)
    assert refused.value.param == "input"
    assert refused.value.message == "input: there is no user message with text to answer"
