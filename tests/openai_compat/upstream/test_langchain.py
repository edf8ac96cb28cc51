"""LangChain's ChatOpenAI against the hub, the collection as its model: `bind_tools` (a two-turn
tool exchange, invoked and streamed) and `with_structured_output` reach the LLM behind the hub.
langchain-openai is a dev extra; without it these tests are skipped."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from tests.support.openai_support import REFUND, TOOLS

langchain_openai = pytest.importorskip("langchain_openai")
messages = pytest.importorskip("langchain_core.messages")
pytestmark = pytest.mark.usefixtures("calling")


class Refund(BaseModel):
    days: int


def chat_model(server, model: str):
    return langchain_openai.ChatOpenAI(
        base_url=server.url + "/v1", api_key="x", model=model, max_retries=0
    )


@pytest.mark.parametrize("model", ["relay", "docs"])
@pytest.mark.parametrize("stream", [False, True])
def test_bind_tools_two_turns(server, upstreams, model, stream):
    fake = upstreams[1] if model == "relay" else upstreams[0]
    path = "/v1/chat/completions" if model == "relay" else "/api/chat"
    llm = chat_model(server, model).bind_tools(TOOLS)
    if stream:
        chunks = list(llm.stream(REFUND))
        called = chunks[0]
        for chunk in chunks[1:]:
            called += chunk
    else:
        called = llm.invoke(REFUND)
    [call] = called.tool_calls
    assert (call["name"], call["args"]) == ("open_ticket", {"days": 30})
    assert fake.calls(path)[-1].body["tools"] == TOOLS
    result = messages.ToolMessage("T-42 opened", tool_call_id=call["id"])
    done = llm.invoke([messages.HumanMessage(REFUND), called, result])
    assert done.content.startswith("Ticket opened for 30 days [1].")
    sent = fake.calls(path)[-1].body["messages"]
    assert "[1] (source: billing.md)" in sent[0]["content"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == "T-42 opened"


def test_with_structured_output(server, upstreams):
    _, relay = upstreams
    relay.reply = '{"days": 30}'
    assert chat_model(server, "relay").with_structured_output(Refund).invoke(REFUND) == Refund(
        days=30
    )
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["days"]
