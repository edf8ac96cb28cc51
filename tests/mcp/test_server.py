"""The SDK's MCP server with the hub's manners (rag_api.mcp.server.HubServer), called in process
with small tools of its own: a tool's arguments are its parameters but the Context, an argument it
does not take is refused naming what it takes, an unknown tool (a write tool on a server without
them: why) is refused, and a tool's failure is one `CODE: message` line without the SDK's prefix;
a crash is INTERNAL_ERROR with its cause kept."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from rag_api.mcp.server import HubServer

HINTS = ToolAnnotations(read_only_hint=True)


class Broken(RuntimeError):
    pass


def server() -> HubServer:
    """A server of four tools: echo (its arguments back), now (none), fail (its own ToolError),
    crash (a bug) and lost (a resource error)."""
    hub = HubServer("test-hub")

    async def echo(
        ctx: Context, word: Annotated[str, Field(min_length=2)], times: int = 1
    ) -> dict[str, Any]:
        assert isinstance(ctx, Context)
        return {"said": word * times}

    def now() -> dict[str, Any]:
        return {"now": 0}

    def fail(code: str) -> dict[str, Any]:
        raise ToolError(f"{code}: the tool says no")

    def crash() -> dict[str, Any]:
        raise Broken("a bug")

    def lost() -> dict[str, Any]:
        raise ResourceError("the resource is gone")

    for tool in (echo, now, fail, crash, lost):
        hub.add(tool, HINTS, f"The {tool.__name__} tool.")
    return hub


def called(hub: HubServer, tool: str, **arguments: Any) -> Any:
    return asyncio.run(hub.call_tool(tool, arguments))


def refusal(hub: HubServer, tool: str, **arguments: Any) -> str:
    with pytest.raises(ToolError) as refused:
        called(hub, tool, **arguments)
    return str(refused.value)


def test_a_tools_arguments_are_its_parameters_but_the_context() -> None:
    hub = server()
    assert hub.arguments == {
        "echo": ("word", "times"),
        "now": (),
        "fail": ("code",),
        "crash": (),
        "lost": (),
    }
    tools = {tool.name: tool for tool in asyncio.run(hub.list_tools())}
    assert list(tools) == ["echo", "now", "fail", "crash", "lost"]
    assert tools["echo"].description == "The echo tool."
    assert tools["echo"].annotations == HINTS
    assert set(tools["echo"].input_schema["properties"]) == {"word", "times"}


def test_the_server_is_made_as_the_sdks_with_its_name_and_instructions() -> None:
    hub = HubServer("named-hub", instructions="Ask away.")
    assert (hub.name, hub.instructions, hub.arguments) == ("named-hub", "Ask away.", {})


def test_a_tool_answers_with_the_arguments_it_takes() -> None:
    assert called(server(), "echo", word="ab", times=2).structured_content == {"said": "abab"}


def test_a_tool_runs_with_the_context_of_its_call() -> None:
    hub, seen = server(), []

    def whoami(ctx: Context) -> dict[str, Any]:
        seen.append(ctx)
        return {}

    hub.add(whoami, HINTS, "Who calls.")
    context = Context(mcp_server=hub)
    asyncio.run(hub.call_tool("whoami", {}, context))
    assert len(seen) == 1 and seen[0] is context


def test_an_argument_a_tool_does_not_take_is_refused_naming_the_ones_it_takes() -> None:
    hub = server()
    assert refusal(hub, "echo", word="ab", time=2, loud=True) == (
        "INVALID_REQUEST: time: not an argument of echo (it takes word, times)"
    )
    assert refusal(hub, "now", at="noon") == (
        "INVALID_REQUEST: at: not an argument of now (it takes none)"
    )


def test_an_unknown_tool_is_refused_and_a_write_tool_says_it_needs_a_writers_key() -> None:
    hub = server()
    assert refusal(hub, "summarise") == (
        "INVALID_REQUEST: no tool 'summarise' (the tools: echo, now, fail, crash, lost)"
    )
    for tool in ("upsert_document", "remove_document"):
        assert refusal(hub, tool, collection="docs") == (
            f"FORBIDDEN: {tool} needs a key that may write a collection (RAG_ADMIN_API_KEY, or "
            "`rag-hub keys create NAME --write COLLECTION`); this key only reads"
        )


def test_bad_arguments_are_refused_in_the_hubs_words() -> None:
    hub = server()
    assert refusal(hub, "echo", word="a") == (
        "INVALID_REQUEST: word: must have at least 2 characters"
    )
    assert refusal(hub, "echo") == "INVALID_REQUEST: word: is required"


def test_a_tools_own_error_is_its_line_without_the_sdks_prefix() -> None:
    with pytest.raises(ToolError) as refused:
        called(server(), "fail", code="NOT_FOUND")
    assert str(refused.value) == "NOT_FOUND: the tool says no"
    assert isinstance(refused.value.__cause__, ToolError)


def test_another_tool_error_is_left_as_the_sdk_words_it() -> None:
    with pytest.raises(ToolError) as refused:
        called(server(), "lost")
    assert str(refused.value) == "Error executing tool lost: the resource is gone"
    assert isinstance(refused.value.__cause__, ResourceError)


def test_a_crash_is_an_internal_error_that_keeps_its_cause() -> None:
    with pytest.raises(UnexpectedToolError) as crashed:
        called(server(), "crash")
    assert str(crashed.value) == "INTERNAL_ERROR: crash failed; the hub's log says why"
    assert isinstance(crashed.value.__cause__, Broken)
