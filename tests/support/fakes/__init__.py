"""Protocol-faithful fake upstreams (Ollama, OpenAI-compatible) served over real HTTP for tests."""

from tests.support.fakes.http import FakeServer, Reject, Request
from tests.support.fakes.ollama import FakeOllama, embed
from tests.support.fakes.openai_upstream import FakeOpenAI

__all__ = ["FakeOllama", "FakeOpenAI", "FakeServer", "Reject", "Request", "embed"]
