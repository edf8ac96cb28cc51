"""End to end on the shipped `docs` collection (embedded Qdrant, bundled MiniLM): the official SDK gets
grounded, cited answers with no LLM server (extractive) and through an Ollama-protocol server."""

from __future__ import annotations

import re

import openai
import pytest

from rag_api.settings import Settings
from tests.conftest import REPO, repo_yaml, write_config
from tests.support.fakes import FakeOllama
from tests.support.openai_support import start_indexed

pytestmark = pytest.mark.slow
QUESTIONS = {q["question"]: q for q in repo_yaml("tests/data/kb_questions.yaml")["docs"]}
REFUND = "How many days do I have to ask for a refund?"
CIPHER = "Which cipher is used to encrypt customer data stored on disk?"
SHORTCUT = "Which keyboard shortcut jumps straight to a page by typing its name?"
PENTEST = "How often does an outside firm run a penetration test?"
PASSAGE = re.compile(r"\[1\] \(source: [^)]*\)\n(.*?)(?=\n\n\[2\] \(source: |\Z)", re.S)


def quote_first_passage(body: dict) -> str:
    """The fake Ollama's reply: passage [1] of the context the hub sent, quoted and cited."""
    return PASSAGE.search(body["messages"][0]["content"]).group(1).strip() + " [1]"


@pytest.fixture(scope="module")
def ollama():
    with FakeOllama() as fake:
        fake.reply = quote_first_passage
        yield fake


@pytest.fixture(scope="module")
def client(tmp_path_factory, ollama):
    root = tmp_path_factory.mktemp("openai_e2e")
    shipped = repo_yaml("collections.yaml")
    docs = {**shipped["collections"]["docs"], "kb": str(REPO / "kb" / "docs")}
    docs["llm"] = {"provider": "ollama", "model": "llama3.2"}  # the README's three lines
    config = write_config(root / "collections.yaml", {"docs": docs})
    # the tests switch the LLM off and on at will: no circuit breaking in between
    settings = Settings(
        config=config, data_dir=root / "data", ollama_url=ollama.url, llm_failures=1000
    )
    hub, live = start_indexed(settings, "docs")
    yield openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    live.stop()
    hub.close()


def assert_grounded(question: str, text: str, sources: list[dict]) -> None:
    expected = QUESTIONS[question]
    assert expected["answer_contains"] in text, text
    assert expected["source"] in {s["source"] for s in sources}
    footer = text.rsplit("\n\nSources: ", 1)[1]  # the sources the answer cites
    assert expected["source"] in footer


def test_no_llm_server_answers_extractively_with_sources(client, ollama):
    ollama.stop()
    assert [m.id for m in client.models.list()] == ["docs", "docs:llm"]

    completion = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": REFUND}]
    )
    extra = completion.model_extra
    assert_grounded(REFUND, completion.choices[0].message.content, extra["sources"])
    assert extra["generator"] == "extractive" and "Ollama" in extra["warning"]

    chunks = list(
        client.chat.completions.create(
            model="docs", messages=[{"role": "user", "content": CIPHER}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert_grounded(CIPHER, text, chunks[-1].model_extra["sources"])

    response = client.responses.create(model="docs", input=SHORTCUT)
    assert_grounded(SHORTCUT, response.output_text, response.model_extra["sources"])

    events = list(client.responses.create(model="docs", input=PENTEST, stream=True))
    done = events[-1].response
    assert_grounded(PENTEST, done.output_text, done.model_extra["sources"])


def test_ollama_answers_grounded_in_the_collection(client, ollama):
    ollama.start()
    completion = client.chat.completions.create(
        model="docs", messages=[{"role": "user", "content": SHORTCUT}]
    )
    assert completion.model_extra["generator"] == "ollama"
    assert_grounded(
        SHORTCUT, completion.choices[0].message.content, completion.model_extra["sources"]
    )
    events = list(client.responses.create(model="docs", input=REFUND, stream=True))
    done = events[-1].response
    assert done.model_extra["generator"] == "ollama" and done.usage.output_tokens > 0
    assert_grounded(REFUND, done.output_text, done.model_extra["sources"])


def test_follow_up_is_searched_with_the_previous_question(client, ollama):
    ollama.stop()
    alone = client.chat.completions.create(
        model="docs", messages=[{"role": "user", "content": "How do I fix it?"}]
    )
    alone_sources = [s["source"] for s in alone.model_extra["sources"]]
    assert "release-notes/4.0.3" not in alone_sources  # on its own it cannot know what "it" is
    history = [
        {"role": "user", "content": "What does error LMN-4031 mean?"},
        {"role": "assistant", "content": "Sync is paused because the local cache is too old."},
        {"role": "user", "content": "How do I fix it?"},
    ]
    follow_up = client.chat.completions.create(model="docs", messages=history)
    text = follow_up.choices[0].message.content
    assert "Rebuild local cache" in text
    assert follow_up.model_extra["sources"][0]["source"] == "release-notes/4.0.3"


def test_a_follow_up_that_names_its_own_topic_is_searched_as_itself(client, ollama):
    ollama.stop()
    history = [
        {"role": "user", "content": "Which cipher protects data at rest in Lumen Notes?"},
        {"role": "assistant", "content": "Data at rest is encrypted with AES-256 [1]."},
        {"role": "user", "content": "And how long is the refund window?"},
    ]
    follow_up = client.chat.completions.create(model="docs", messages=history)
    assert follow_up.model_extra["sources"][0]["source"] == "product-faq.md"
    text = follow_up.choices[0].message.content
    assert "refund" in text and "AES" not in text, text
    history[-1]["content"] = "And what about in transit?"
    depends = client.chat.completions.create(model="docs", messages=history)
    assert depends.model_extra["sources"][0]["source"] == "security-whitepaper.html"
