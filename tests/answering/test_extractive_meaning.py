"""An extractive answer scored by meaning (`llm.extractive_scorer: semantic`) through a model behind
a real HTTP server (the OpenAI-compatible fake): the answer's sentences are embedded there, and
with the server gone the answer still comes, by words alone."""

from __future__ import annotations

from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.indexing.sync import sync_collection
from tests.conftest import hash_collection, texts_embedded, write_config
from tests.support.fakes import FakeOpenAI

PLANS = "The Plus plan suits small teams. The Plus plan is billed monthly.\n"
QUESTION = "How often is the Plus plan paid?"  # the words tie: meaning is asked


def test_meaning_is_asked_of_the_model_and_its_loss_answers_by_words(
    tmp_path, make_settings, open_hub, caplog
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "plans.md").write_text(PLANS, encoding="utf-8")
    with FakeOpenAI({}, {"e": 32}) as fake:
        entry = hash_collection(
            kb,
            dim=32,
            embedder={"provider": "openai", "model": "e", "dim": 32, "base_url": fake.url + "/v1"},
            retrieval={"mode": "sparse"},  # a search that needs no query vector
            llm={"provider": "extractive", "extractive_scorer": "semantic"},
        )
        hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": entry})))
        sync_collection(hub.collection("docs"))
        before = texts_embedded("openai", "passage")
        body = run_query(hub, "docs", QueryBody(query=QUESTION))
        sentences = texts_embedded("openai", "passage") - before
        assert sentences == 2  # the two sentences, by the collection's model
        assert body.generator == "extractive" and body.answer is not None
        assert "The Plus plan" in body.answer
    with caplog.at_level("WARNING"):  # the model's server is gone; a question not asked before
        body = run_query(hub, "docs", QueryBody(query="How often is the Plus plan paid for?"))
    assert body.generator == "extractive" and body.warning is None
    assert body.answer is not None
    assert "suits small teams" in body.answer and "billed monthly" in body.answer  # the tie
    assert "not scored by meaning" in caplog.text
