"""Protocol-faithful fake upstreams (Ollama, OpenAI-compatible) served over real HTTP for tests."""

from tests.fakes.http import FakeServer, Reject, Request
from tests.fakes.ollama import FakeOllama, embed
from tests.fakes.openai_upstream import FakeOpenAI

__all__ = ["FakeOllama", "FakeOpenAI", "FakeServer", "Reject", "Request", "embed"]
