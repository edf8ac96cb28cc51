"""The routing rule, signals and cross-collection fusion on hand-made inputs (no model)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from rag_api.config import RoutingConfig, parse_config
from rag_api.embedding.bm25 import sparse_encoder
from rag_api.embedding.languages import text_language
from rag_api.embedding.query_vectors import QueryVectors
from rag_api.errors import ConfigError
from rag_api.routing.decide import (
    CONFIDENT,
    MARGIN,
    STRONG,
    by_description,
    by_language,
    by_probe,
    by_signals,
    confirmed,
    strongest_first,
)
from rag_api.routing.probe import Probe
from rag_api.routing.signals import declared_matches, description_matches
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchOutcome
from rag_api.store.fusion import rank_fusion
from tests.conftest import hash_collection


class Named:
    """A stand-in for a Collection where the rule reads only the name."""

    def __init__(self, name: str) -> None:
        self.name = name


def probe(name: str, score: float | None, *signals: str) -> Probe:
    return Probe(Named(name), list(signals), score=score)  # type: ignore[arg-type]


def test_signals_decide_only_with_a_strict_majority() -> None:
    a, b = probe("a", None, "keyword:tpv", "entity:Caxalia"), probe("b", None, "keyword:saml")
    assert by_signals([a, b]) is a
    assert by_signals([probe("a", None, "keyword:x"), probe("b", None, "entity:Y")]) is None
    # the language and the description are not declared signals
    assert by_signals([probe("a", None, "language:es"), probe("b", None)]) is None
    assert by_signals([probe("a", None, "description:refunds"), probe("b", None)]) is None


def test_a_description_hints_only_with_a_strict_majority() -> None:
    a = probe("a", None, "description:cash", "description:closing", "language:en")
    b = probe("b", None, "description:refunds", "keyword:saml")
    assert by_description([a, b]) is a
    assert by_description([probe("a", None, "description:x"), b]) is None
    assert by_description([probe("a", None, "keyword:x"), probe("b", None)]) is None


def test_a_description_stands_in_for_the_lead_not_for_the_strength() -> None:
    hinted = probe("a", STRONG)
    # the probe alone would search wide (no lead); the description narrows
    assert by_probe([hinted, probe("b", STRONG + MARGIN / 2)]) is None
    assert confirmed(hinted, [hinted, probe("b", STRONG + MARGIN / 2)]) is hinted
    assert confirmed(hinted, [hinted]) is hinted
    assert confirmed(hinted, [hinted, probe("b", STRONG + MARGIN + 0.01)]) is None  # behind
    weak = probe("a", STRONG - 0.01)
    assert confirmed(weak, [weak, probe("b", 0.0)]) is None  # its own probe does not agree


def test_description_words_go_through_the_collections_analyser() -> None:
    english = sparse_encoder("en").terms
    description = "Refund policies and billing of the Business plan"
    found = description_matches("What is the refund policy of the plans?", description, english)
    assert found == ["description:refund", "description:policy", "description:plans"]
    assert description_matches("Refunds? REFUND!", description, english) == ["description:refunds"]
    assert description_matches("What is the refund?", "", english) == []
    # an English description of a Spanish collection: English function words never match
    spanish = sparse_encoder("es").terms
    assert description_matches("the cost of the terminal", "point-of-sale terminal", spanish) == [
        "description:terminal"
    ]


def test_a_probe_narrows_only_when_strong_and_clearly_ahead() -> None:
    assert by_probe([probe("a", STRONG), probe("b", STRONG - MARGIN)]).name == "a"
    assert by_probe([probe("a", STRONG), probe("b", STRONG - MARGIN / 2)]) is None
    assert by_probe([probe("a", STRONG - 0.01), probe("b", 0.0)]) is None
    assert by_probe([probe("a", 0.1), probe("b", 0.9)]).name == "b"


def test_ties_go_to_the_language_then_the_signals_then_the_config_order() -> None:
    first, second = probe("a", 0.5), probe("b", 0.5, "language:es")
    assert [p.name for p in strongest_first([first, second])] == ["b", "a"]
    keyword = probe("c", 0.5, "keyword:x")
    assert [p.name for p in strongest_first([first, keyword])] == ["c", "a"]
    described = probe("e", 0.5, "description:x")
    assert [p.name for p in strongest_first([first, described])] == ["e", "a"]
    assert [p.name for p in strongest_first([described, keyword])] == ["c", "e"]
    assert [p.name for p in strongest_first([first, probe("d", 0.5)])] == ["a", "d"]


def test_keywords_ignore_case_and_accents_entities_keep_case() -> None:
    cfg = RoutingConfig(keywords=["devolución", "informe Z"], entities=["Caxalia"])
    assert declared_matches("DEVOLUCION del informe z", cfg) == [
        "keyword:devolución",
        "keyword:informe Z",
    ]
    assert declared_matches("caxalia devoluciones", cfg) == []  # case; whole words only
    assert declared_matches("¿Y el Caxalia?", cfg) == ["entity:Caxalia"]


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("What is the refund period for the annual plan?", "en"),
        ("¿Cuál es el plazo para pedir la devolución?", "es"),
        ("Qual è il periodo di rimborso del piano annuale?", "it"),
        ("Cataracts cause blindness.", None),  # no function word: no language
    ],
)
def test_the_text_language_comes_from_function_words(question: str, language: str) -> None:
    assert text_language(question, ["en", "es", "it"]) == language


def test_only_the_hubs_languages_are_considered() -> None:
    assert text_language("Qual è il periodo di rimborso?", ["en", "es"]) is None


def test_weighted_rank_fusion_by_hand() -> None:
    # k = 10: a = 1/11 + 0.5/12, b = 1/12, c = 0.5/11, d = 0.5/13 ... hand-computed
    fused = rank_fusion([["a", "b"], ["c", "a", "d"]], 10, [1.0, 0.5])
    expected = {"a": 1 / 11 + 0.5 / 12, "b": 1 / 12, "c": 0.5 / 11, "d": 0.5 / 13}
    assert [pid for pid, _ in fused] == ["a", "b", "c", "d"]
    assert dict(fused) == pytest.approx(expected)
    # equal scores keep the order of the lists
    assert [pid for pid, _ in rank_fusion([["x"], ["y"]], 10)] == ["x", "y"]


def test_the_router_name_cannot_be_a_collection() -> None:
    collections = {"docs": hash_collection(), "auto": hash_collection()}
    with pytest.raises(ConfigError, match="router.name 'auto' is also a collection"):
        parse_config({"default_collection": "docs", "collections": collections})
    config = parse_config(
        {"default_collection": "docs", "router": {"name": "any"}, "collections": collections}
    )
    assert config.router.name == "any" and config.router.min_passages == 3


def test_a_query_vector_is_computed_once_for_concurrent_callers() -> None:
    vectors = QueryVectors(capacity=2)
    calls = []

    def slow() -> np.ndarray:
        calls.append(1)
        time.sleep(0.2)
        return np.ones(3, np.float32)

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(vectors.get("q", slow))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(results) == 4
    vectors.get("r", slow), vectors.get("s", slow)  # "q" falls out of the LRU
    vectors.get("q", slow)
    assert len(calls) == 4


def test_a_failed_embedding_is_not_kept() -> None:
    vectors = QueryVectors()

    def broken() -> np.ndarray:
        raise RuntimeError("embedder down")

    with pytest.raises(RuntimeError):
        vectors.get("q", broken)
    assert vectors.get("q", lambda: np.zeros(2, np.float32)).shape == (2,)


def test_when_only_one_probe_finds_anything_it_is_chosen() -> None:
    found = probe("b", 0.05)
    passage = Passage("id", "a.md", 0, 0.9, "text", {}, dense_score=0.9)
    found.outcome = SearchOutcome([passage], "hybrid", {})
    empty = probe("a", 0.0)
    empty.outcome = SearchOutcome([], "hybrid", {})
    assert by_probe([empty, found]) is found


def test_the_questions_language_settles_it_only_when_confident() -> None:
    assert by_language([probe("a", CONFIDENT, "language:es")]).name == "a"
    assert by_language([probe("a", CONFIDENT - 0.01, "language:es")]) is None
    # two collections in the question's language: the lead counts as well
    two = [probe("a", CONFIDENT + 0.1, "language:es"), probe("b", CONFIDENT, "language:es")]
    assert by_language(two) is None
