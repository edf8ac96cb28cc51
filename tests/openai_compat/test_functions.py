"""Responses API function tools in chat completions' form and back (rag_api.openai_compat.functions):
a flat tool, a named tool_choice and a function_call item each become what every upstream takes,
and what cannot be converted is refused with the parameter it is about."""

from __future__ import annotations

import re

import pytest

from rag_api.errors import InvalidRequest
from rag_api.openai_compat.functions import (
    chat_tool_choice,
    chat_tools,
    function_call_item,
    tool_call,
)

WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": False,
}


def test_a_flat_function_tool_nests_under_function() -> None:
    bare = {"type": "function", "name": "now", "description": None, "extra": 1}
    assert chat_tools([WEATHER, bare]) == (
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city",
                "parameters": WEATHER["parameters"],
                "strict": False,  # a false value is kept: only absent or null fields go
            },
        },
        {"type": "function", "function": {"name": "now"}},  # unknown and null fields dropped
    )
    assert chat_tools(None) == () and chat_tools([]) == ()


REFUSED_TOOLS = [
    (
        [WEATHER, {"type": "web_search"}],
        "tools[1].type",
        "tools[1].type: only 'function' tools are supported, got 'web_search': the hub runs no "
        "hosted tools (web search, file search, computer use, MCP)",
    ),
    (
        ["weather"],
        "tools[0].type",
        "tools[0].type: only 'function' tools are supported, got None: the hub runs no hosted "
        "tools (web search, file search, computer use, MCP)",
    ),
    ([{"type": "function"}], "tools[0].name", "tools[0].name: a function needs a name"),
    ([{"type": "function", "name": ""}], "tools[0].name", "tools[0].name: a function needs a name"),
    ([{"type": "function", "name": 3}], "tools[0].name", "tools[0].name: a function needs a name"),
]


@pytest.mark.parametrize(("tools", "param", "message"), REFUSED_TOOLS)
def test_a_tool_that_is_not_a_named_function_is_refused(tools, param: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        chat_tools(tools)
    assert (refused.value.param, refused.value.message) == (param, message)


def test_a_named_tool_choice_moves_under_function_and_a_word_stays() -> None:
    named = {"type": "function", "name": "weather"}
    assert chat_tool_choice(named) == {"type": "function", "function": {"name": "weather"}}
    for word in ("auto", "none", "required", None):
        assert chat_tool_choice(word) == word


@pytest.mark.parametrize(
    "choice", [{"type": "web_search"}, {"type": "function"}, {"type": "function", "name": 3}, {}]
)
def test_a_tool_choice_that_names_no_function_is_refused(choice) -> None:
    with pytest.raises(InvalidRequest) as refused:
        chat_tool_choice(choice)
    assert refused.value.param == "tool_choice"
    assert refused.value.message == (
        "tool_choice: must be 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}"
    )


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city": "Bilbao"}'},
}


def test_a_tool_call_is_a_function_call_item_with_an_id_of_its_own() -> None:
    item, again = function_call_item(CALL), function_call_item(CALL)
    assert {k: v for k, v in item.items() if k != "id"} == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Bilbao"}',
        "status": "completed",
    }
    assert re.fullmatch(r"fc_[0-9a-f]{32}", item["id"]) and item["id"] != again["id"]


def test_a_function_call_item_is_the_tool_call_it_was() -> None:
    item = function_call_item(CALL)
    assert tool_call(item, "input[1]") == CALL
    # without a call_id the item's id stands for it; without either, an empty one
    del item["call_id"]
    assert tool_call(item, "input[1]")["id"] == item["id"]
    assert tool_call({"name": "now"}, "input[0]") == {
        "id": "",
        "type": "function",
        "function": {"name": "now", "arguments": ""},
    }


@pytest.mark.parametrize(
    "item", [{"arguments": "{}"}, {"name": 3, "arguments": "{}"}, {"name": "now", "arguments": {}}]
)
def test_a_function_call_item_without_a_name_or_text_arguments_is_refused(item) -> None:
    with pytest.raises(InvalidRequest) as refused:
        tool_call(item, "input[2]")
    assert (refused.value.param, refused.value.message) == (
        "input[2]",
        "input[2]: a function_call needs a 'name' and 'arguments' (a JSON string)",
    )
