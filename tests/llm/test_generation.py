"""Generation: real streaming from Ollama / OpenAI-compatible upstreams, <think> stripping, fallbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.answering.answer import answer, select_context
from rag_api.embedding.bm25 import sparse_encoder
from rag_api.hub import Hub
from rag_api.llm.extractive import extractive_answer
from rag_api.llm.generators import ThinkFilter, pieces
from rag_api.points.collection import Collection
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config
from tests.support.fakes import FakeOllama, FakeOpenAI

REFUND = Passage(
    "1",
    "faq.md",
    0,
    0.9,
    "## Refunds\n\nCan I get a refund?\nYes. Refunds are possible within 30 days\nof purchase.",
    {},
)
VACATION = Passage("2", "policies.md", 3, 0.5, "Employees get 25 days of vacation per year.", {})


@pytest.fixture
def make_hub(tmp_path: Path, make_settings, open_hub):
    def make(llm: dict, language: str = "en", **settings) -> tuple[Hub, Collection]:
        config = write_config(
            tmp_path / "c.yaml", {"docs": hash_collection(language=language, llm=llm)}
        )
        hub = open_hub(make_settings(config, **settings))
        return hub, hub.collection("docs")

    return make


@pytest.mark.parametrize("split", [1, 2, 3, 7])
def test_think_filter_handles_tags_split_across_pieces(split: int) -> None:
    text = (
        "<think>step one\nstep two</think>\n\nThe answer is 30 days [1]. <think>more</think>Done."
    )
    think = ThinkFilter()
    out = (
        "".join(think.feed(text[i : i + split]) for i in range(0, len(text), split)) + think.flush()
    )
    assert out == "The answer is 30 days [1]. Done."
    unclosed = ThinkFilter()
    assert unclosed.feed("<think>never closed") + unclosed.flush() == ""


def test_pieces_rebuild_the_text() -> None:
    text = "Refunds are possible within 30 days of purchase, without justification."
    parts = list(pieces(text, size=10))
    assert "".join(parts) == text and len(parts) > 3


def test_extractive_answer_cites_relevant_sentences() -> None:
    text = extractive_answer(
        "How long for a refund?", [REFUND, VACATION], "en", sparse_encoder("en")
    )
    assert text.splitlines() == [
        "From the knowledge base:",
        "- Can I get a refund? Yes. Refunds are possible within 30 days of purchase. [1]",
    ]
    spanish = extractive_answer("¿reembolso?", [REFUND], "es", sparse_encoder("es"), fallback=True)
    assert spanish.startswith("El modelo de lenguaje no está disponible")


def test_context_budget_keeps_best_passages_first() -> None:
    assert [p.id for p in select_context([REFUND, VACATION], 10_000)] == ["1", "2"]
    assert [p.id for p in select_context([REFUND, VACATION], len(REFUND.text) + 5)] == ["1"]
    (cut,) = select_context([REFUND, VACATION], 20)
    assert cut.text == REFUND.text[:20]


def test_no_evidence_is_a_fixed_answer_without_llm(make_hub, fake_ollama: FakeOllama) -> None:
    hub, docs = make_hub(
        {"provider": "ollama", "model": "llama3.2"}, language="es", ollama_url=fake_ollama.url
    )
    result = answer(hub.generators, docs, "¿Cómo te llamas?", [])
    assert result.text() == "No se encontró información relevante para responder a esta pregunta."
    assert (result.generator, result.usage.as_dict()["total_tokens"]) == ("none", 0)
    assert fake_ollama.calls("/api/chat") == []


def test_ollama_streams_and_reports_usage(make_hub, fake_ollama: FakeOllama) -> None:
    fake_ollama.reply = "<think>let me see</think>Refunds: 30 days [1]."
    hub, docs = make_hub({"provider": "ollama", "model": "llama3.2"}, ollama_url=fake_ollama.url)
    result = answer(hub.generators, docs, "refund?", [REFUND], client_system="Be terse.")
    parts = list(result)
    assert "".join(parts) == "Refunds: 30 days [1]." and len(parts) > 2
    assert (
        result.generator == "ollama"
        and result.model == "llama3.2"
        and result.usage.completion_tokens > 0
    )
    (call,) = fake_ollama.calls("/api/chat")
    system = call.body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be terse.")
    assert "[1] (source: faq.md)" in system["content"] and call.body["messages"][-1] == {
        "role": "user",
        "content": "refund?",
    }


def test_openai_compatible_upstream(make_hub, fake_openai: FakeOpenAI) -> None:
    llm = {"provider": "openai", "model": "gpt-4o-mini", "base_url": fake_openai.url + "/v1"}
    hub, docs = make_hub(llm)
    result = answer(
        hub.generators,
        docs,
        "refund?",
        [REFUND],
        history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    )
    assert result.text() == "Answer to: refund?"
    assert result.generator == "openai" and result.usage.prompt_tokens > 0
    body = fake_openai.calls("/v1/chat/completions")[0].body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]


def test_unreachable_llm_falls_back_to_extractive_and_says_so(
    make_hub, fake_ollama: FakeOllama
) -> None:
    hub, docs = make_hub({"provider": "ollama", "model": "llama3.2"}, ollama_url=fake_ollama.url)
    fake_ollama.stop()
    result = answer(hub.generators, docs, "How long for a refund?", [REFUND])
    text = result.text()
    assert (
        result.generator == "extractive"
        and "30 days" in text
        and text.startswith("The language model is unavailable")
    )
    assert "Ollama at" in result.warning and "answered extractively" in result.warning


def test_closing_the_answer_stops_the_upstream(make_hub, fake_ollama: FakeOllama) -> None:
    fake_ollama.reply = " ".join(f"word{i}" for i in range(300))
    fake_ollama.token_delay = 0.01
    hub, docs = make_hub({"provider": "ollama", "model": "llama3.2"}, ollama_url=fake_ollama.url)
    result = answer(hub.generators, docs, "refund?", [REFUND])
    stream = iter(result)
    next(stream), next(stream)
    stream.close()
    assert fake_ollama.disconnected.wait(5)
    assert fake_ollama.pieces_sent < 100
