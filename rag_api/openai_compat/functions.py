"""Responses API function tools in chat completions' form and back: the one place that converts.

The Responses API spells a tool flat (`{"type": "function", "name", "parameters", ...}`), a named
tool_choice `{"type": "function", "name"}`, a call an output item `{"type": "function_call",
"call_id", "name", "arguments"}`; chat completions, and so every upstream the hub forwards to, nest
them under `function` and call a call a `tool_call`.
"""

from __future__ import annotations

import uuid
from typing import Any

from rag_api.errors import InvalidRequest

FUNCTION_FIELDS = ("name", "description", "parameters", "strict")


def chat_tools(tools: list[Any] | None) -> tuple[dict[str, Any], ...]:
    """Responses `tools` as chat tools; only function tools (the hub runs no hosted tools)."""
    converted = []
    for i, tool in enumerate(tools or ()):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            raise InvalidRequest(
                f"tools[{i}].type: only 'function' tools are supported, got {kind!r}: the hub "
                "runs no hosted tools (web search, file search, computer use, MCP)",
                param=f"tools[{i}].type",
            )
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise InvalidRequest(
                f"tools[{i}].name: a function needs a name", param=f"tools[{i}].name"
            )
        function = {key: tool[key] for key in FUNCTION_FIELDS if tool.get(key) is not None}
        converted.append({"type": "function", "function": function})
    return tuple(converted)


def chat_tool_choice(choice: Any) -> Any:
    """Responses `tool_choice` in chat form: a named function moves under `function`."""
    if isinstance(choice, dict):
        if choice.get("type") != "function" or not isinstance(choice.get("name"), str):
            raise InvalidRequest(
                "tool_choice: must be 'auto', 'none', 'required' or "
                '{"type": "function", "name": ...}',
                param="tool_choice",
            )
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def function_call_item(call: dict[str, Any]) -> dict[str, Any]:
    """A chat tool call (as `Reply.tool_calls` has it) as a Responses `function_call` item."""
    function = call["function"]
    return {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex}",
        "call_id": call["id"],
        "name": function["name"],
        "arguments": function["arguments"],
        "status": "completed",
    }


def tool_call(item: dict[str, Any], where: str) -> dict[str, Any]:
    """A `function_call` input item as the chat tool call it was."""
    name, arguments = item.get("name"), item.get("arguments", "")
    if not isinstance(name, str) or not isinstance(arguments, str):
        raise InvalidRequest(
            f"{where}: a function_call needs a 'name' and 'arguments' (a JSON string)", param=where
        )
    call_id = item.get("call_id") or item.get("id") or ""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
