"""Kept query vectors (rag_api.embedding.query_vectors) through the router: a vector is reused
only for the same embedder and the same prefixed text."""

from __future__ import annotations

import numpy as np

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.settings import Settings

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
