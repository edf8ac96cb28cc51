"""Kept query and passage vectors (rag_api.embedding.query_vectors) through the router: a vector
is reused only for the same embedder and the same prefixed text."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import REGISTRY

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.embedding.query_vectors import QueryVectors
from rag_api.settings import Settings
from tests.conftest import texts_embedded

QUESTION = "how many days for a refund"


def test_two_embedders_asking_the_same_text_get_their_own_vectors() -> None:
    router = Embedders(Settings())
    first = EmbedderConfig(provider="hash", model="h1", dim=64)
    second = EmbedderConfig(provider="hash", model="h2", dim=64)
    a = router.query(first, QUESTION)
    b = router.query(second, QUESTION)  # the first one's vector is kept: it must not come back
    assert np.allclose(a, router.get(first).embed([QUESTION], query=True)[0])
    assert np.allclose(b, router.get(second).embed([QUESTION], query=True)[0])
    assert not np.allclose(a, b)
    assert router.query(first, QUESTION) is a  # and each is kept for its own embedder


def test_two_prefixes_asking_the_same_text_get_their_own_vectors() -> None:
    router = Embedders(Settings())
    plain = EmbedderConfig(provider="hash", model="h", dim=64)
    prefixed = plain.model_copy(update={"query_prefix": "query: "})
    a = router.query(plain, QUESTION)
    b = router.query(prefixed, QUESTION)
    assert np.allclose(b, router.get(plain).embed(["query: " + QUESTION], query=True)[0])
    assert not np.allclose(a, b)
    assert router.query(prefixed, QUESTION) is b


SENTENCES = ["Refunds within 30 days.", "The Plus plan is billed monthly.", "AES-256 at rest."]


def test_passages_asked_again_are_not_embedded_again() -> None:
    """The extractive scorer's sentences: those kept come back, the rest go in one call."""
    router = Embedders(Settings())
    plain = EmbedderConfig(provider="hash", model="h", dim=64)
    embedder = router.get(plain)
    texts, calls = texts_embedded("hash", "passage"), passage_calls()
    first = router.passages(plain, SENTENCES[:2])
    asked = [SENTENCES[1], SENTENCES[2], SENTENCES[0], SENTENCES[2]]
    again = router.passages(plain, asked)
    assert texts_embedded("hash", "passage") - texts == 3  # the new one once, in a second call
    assert passage_calls() - calls == 2
    assert np.array_equal(again[[2, 0]], first) and np.array_equal(again[1], again[3])
    assert np.allclose(again, embedder.embed(asked))
    prefixed = plain.model_copy(update={"document_prefix": "passage: "})
    other = router.passages(prefixed, SENTENCES[:1])  # another prefix: another vector
    assert np.allclose(other, embedder.embed(["passage: " + SENTENCES[0]]))
    assert not np.allclose(other[0], first[0])


def passage_calls() -> float:
    labels = {"provider": "hash", "kind": "passage"}
    return REGISTRY.get_sample_value("rag_embedding_duration_seconds_count", labels) or 0.0


def test_a_failed_batch_of_passages_keeps_nothing_and_never_hangs() -> None:
    vectors = QueryVectors()

    def short(missing: list) -> list[np.ndarray]:
        return [np.zeros(2, np.float32)]  # one vector for two texts

    for compute in (short, lambda missing: 1 / 0):
        with pytest.raises((ValueError, ZeroDivisionError)):
            vectors.get_many(["a", "b"], compute)
    both = vectors.get_many(["a", "b"], lambda missing: [np.ones(2, np.float32)] * len(missing))
    assert len(both) == 2
