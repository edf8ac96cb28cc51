"""The OpenAI routes in front of real LLM protocols: one hub per module over a fake Ollama
(`docs`) and a fake OpenAI-compatible server (`relay`), with `plain` extractive beside them; the
parent conftest's `client` talks to this `server`."""

from __future__ import annotations

import pytest

from tests.support.fakes import FakeOllama, FakeOpenAI
from tests.support.openai_support import CALL, upstream_hub


@pytest.fixture(scope="module")
def upstreams():
    with FakeOllama() as ollama, FakeOpenAI() as relay:
        yield ollama, relay


@pytest.fixture(scope="module", params=[None, ":memory:"], ids=["edge", "memory"])
def server(request, tmp_path_factory, upstreams):
    """The hub on the embedded engine, then on qdrant-client's in-memory mode (the server path)."""
    ollama, relay = upstreams
    root = tmp_path_factory.mktemp("upstream")
    hub, live = upstream_hub(root, ollama.url, relay.url, qdrant_url=request.param)
    yield live
    live.stop()
    hub.close()


@pytest.fixture
def calling(upstreams):
    """Both upstreams answer a request offering tools with CALL, and its follow-up with a text."""
    for fake in upstreams:
        fake.tool_calls, fake.reply = [CALL], "Ticket opened for 30 days [1]."
    yield
    for fake in upstreams:
        fake.tool_calls = None
