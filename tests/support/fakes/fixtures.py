"""Function-scoped fixtures: a running FakeOllama and a running FakeOpenAI, stopped after the test."""

from collections.abc import Iterator

import pytest

from tests.support.fakes.ollama import FakeOllama
from tests.support.fakes.openai_upstream import FakeOpenAI


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A FakeOllama with the default models, listening on a free port."""
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A FakeOpenAI with the default models and no API key required, on a free port."""
    with FakeOpenAI() as fake:
        yield fake
