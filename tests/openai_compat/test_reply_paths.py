"""start_reply's paths that depend on the hub around it: `auto` under a key that cannot see
default_collection, which analyser reads an `auto` follow-up, the parameters an llm block refuses
before anything is searched or sent, the minimal answer of a task prompt when the LLM is down,
the language of an `auto` answer without evidence, and what reaches the LLM and the Reply from a
search that found passages (JSON, links, a reranker's warning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.access.grant import Grant, Principal, current
from rag_api.access.links import PassageLinks
from rag_api.errors import InvalidRequest
from rag_api.hub import Hub
from rag_api.llm.generators import Options
from rag_api.llm.prompts import pack
from rag_api.openai_compat.conversation import Conversation
from rag_api.openai_compat.reply import start_reply
from tests.conftest import hash_collection, write_config
from tests.support.fakes import FakeOllama
from tests.support.openai_support import REFUND, index, write_kb

LLM = {"provider": "ollama", "model": "llama3"}
TITLE_PROMPT = (
    "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
    '### Output:\nJSON format: { "title": "your concise title here" }\n'
    "### Chat History:\n<chat_history>\nUSER: How do refunds work?\n</chat_history>"
)
REFUSING = {**LLM, "client_params": {"temperature": "refuse"}}


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    collections = {
        "docs": hash_collection(),
        "quiet": hash_collection(),
        "notes": hash_collection(language="es"),
    }
    config = write_config(tmp_path / "c.yaml", collections, default_collection="quiet")
    return open_hub(make_settings(config, "memory"))


@pytest.fixture
def reading(request):
    if request.param is None:
        yield
        return
    token = current.set(Grant(Principal("k", "k", frozenset(request.param)), "read"))
    yield
    current.reset(token)


@pytest.mark.parametrize(
    ("reading", "chosen"),
    [(None, "quiet"), ({"docs", "notes"}, "docs"), ({"notes", "quiet"}, "quiet")],
    indirect=["reading"],
)
def test_auto_answers_a_task_prompt_from_the_default_else_the_keys_first_collection(
    hub: Hub, reading, chosen: str
) -> None:
    answer = start_reply(hub, "auto", Conversation(TITLE_PROMPT, [], None), None, None)
    assert answer.collection.name == chosen
    assert json.loads(answer.text())["title"]


def follow_up(previous: str, question: str) -> Conversation:
    history = [{"role": "user", "content": previous}, {"role": "assistant", "content": "..."}]
    return Conversation(question, history, None)


def test_auto_reads_a_follow_up_with_the_analyser_of_its_language(hub: Hub) -> None:
    asked = follow_up("¿Cuánto cuesta el plan profesional?", "¿y cuánto cuesta eso?")
    answer = start_reply(hub, "auto", asked, None, None)
    assert answer.retrieval is not None and answer.retrieval["follow_up"] == "merged"
    assert "'eso'" in answer.retrieval["why"]


def test_auto_reads_a_follow_up_of_no_known_language_with_the_default_collection(
    hub: Hub,
) -> None:
    answer = start_reply(hub, "auto", follow_up("How do refunds work?", "pricing?"), None, None)
    assert answer.retrieval is not None and answer.retrieval["follow_up"] == "none"


@pytest.fixture
def strict(tmp_path: Path, make_settings, open_hub) -> Hub:
    config = write_config(tmp_path / "c.yaml", {"strict": hash_collection(llm=REFUSING)})
    return open_hub(make_settings(config, "memory"))


@pytest.mark.parametrize("model", ["strict", "strict:llm", "auto"])
def test_a_temperature_the_llm_block_refuses_is_refused_naming_it(strict: Hub, model: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        start_reply(strict, model, Conversation("How do refunds work?", [], None), 0.5, None)
    assert refused.value.param == "temperature"
    assert refused.value.message == (
        "temperature: this collection's LLM does not take it from clients (llm.client_params)"
    )


@pytest.fixture
def down(tmp_path: Path, make_settings, open_hub) -> Hub:
    llm = {**LLM, "base_url": "http://127.0.0.1:9"}
    config = write_config(tmp_path / "c.yaml", {"down": hash_collection(llm=llm)})
    return open_hub(make_settings(config, "memory"))


def test_an_unreachable_llm_answers_a_task_prompt_with_its_minimal_json_else_nothing(
    down: Hub,
) -> None:
    task = start_reply(down, "down", Conversation(TITLE_PROMPT, [], None), None, None)
    assert json.loads(task.text())["title"]
    assert task.stream.generator == "none" and task.extra()["warning"]
    plain = start_reply(down, "down:llm", Conversation("Q?", [], None), None, None)
    assert plain.text() == ""
    assert plain.stream.generator == "none"


@pytest.fixture
def indexed(tmp_path: Path, make_settings, open_hub, ollama) -> Hub:
    llm = {**LLM, "base_url": ollama.url}
    notes = hash_collection(write_kb(tmp_path / "kb"), llm=llm)
    config = write_config(tmp_path / "c.yaml", {"notes": notes})
    hub = open_hub(make_settings(config, "memory"))
    index(hub, "notes")
    return hub


def chats(ollama: FakeOllama) -> list[dict]:
    return [r.body for r in ollama.requests if r.path == "/api/chat"]


def test_a_json_request_with_passages_reaches_the_llm_and_gets_no_footer(
    indexed: Hub, ollama: FakeOllama
) -> None:
    asked = Options(response_format={"type": "json_object"})
    answer = start_reply(indexed, "notes", Conversation(REFUND, [], None), None, None, asked)
    assert answer.structured is True
    assert answer.text() == "From the LLM."
    assert answer.stream.passages
    [sent] = chats(ollama)
    assert sent["format"] == "json"


def test_the_footer_links_the_passages_found_under_the_base_url(indexed: Hub) -> None:
    signed = PassageLinks(lambda: b"s" * 32, 60, clock=lambda: 1_000_000.0)
    conversation = Conversation(REFUND, [], None)
    answer = start_reply(
        indexed, "notes", conversation, None, None, base_url="https://hub", links=signed
    )
    assert (answer.base_url, answer.links) == ("https://hub", signed)
    assert "](https://hub/" in answer.text()


@pytest.fixture
def bilingual(tmp_path: Path, make_settings, open_hub) -> Hub:
    collections = {
        "docs": hash_collection(routing={"keywords": ["reembolso"]}),
        "notas": hash_collection(language="es"),
    }
    config = write_config(tmp_path / "c.yaml", collections, router={"min_passages": 0})
    return open_hub(make_settings(config, "memory"))


def test_auto_without_evidence_answers_in_the_questions_language(bilingual: Hub) -> None:
    question = "¿Cuántos días tengo para pedir un reembolso?"
    answer = start_reply(bilingual, "auto", Conversation(question, [], None), None, None)
    assert (answer.collection.name, answer.language) == ("docs", "es")
    assert answer.text() == pack("es").no_evidence


def test_a_search_that_could_not_rerank_says_so_in_the_reply(
    tmp_path: Path, make_settings, open_hub
) -> None:
    rerank = {"provider": "http", "model": "m", "base_url": "http://127.0.0.1:9"}
    docs = hash_collection(write_kb(tmp_path / "kb"), rerank=rerank)
    hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": docs}), "memory"))
    index(hub, "docs")
    answer = start_reply(hub, "docs", Conversation(REFUND, [], None), None, None)
    assert answer.retrieval_warning is not None
    assert answer.retrieval_warning.endswith("passages are in retrieval order, not reranked")
    assert answer.extra()["warning"] == answer.retrieval_warning
    assert answer.stream.passages
