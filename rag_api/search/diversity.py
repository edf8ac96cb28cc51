"""Maximal marginal relevance (MMR): give up a little relevance so passages do not repeat each other.

Runs here, over the candidates the search returned with their stored dense vectors, rather than as
Qdrant's MMR query: that one diversifies a single dense search, while this works the same after
dense, sparse or hybrid fusion (and after reranking), on both engines. Each step picks the passage
maximising (1 - diversity) * relevance - diversity * (its highest cosine to a passage already
picked), where relevance is the passage's ranking score (rerank score when reranked) min-max scaled
to [0, 1] over the candidates. diversity 0 keeps the ranking; 1 picks by dissimilarity alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rag_api.search.passage import Passage

CANDIDATES_PER_RESULT = 4  # MMR chooses top_k among this many times top_k candidates (at least 20)
MIN_CANDIDATES = 20


def candidate_pool(top_k: int, limit: int) -> int:
    """How many candidates MMR chooses from: 4 x top_k, at least 20, at most `limit`."""
    return max(top_k, min(limit, max(MIN_CANDIDATES, CANDIDATES_PER_RESULT * top_k)))


def diversify(passages: Sequence[Passage], diversity: float, k: int) -> list[Passage]:
    """The k passages MMR picks, in the order picked."""
    if diversity <= 0 or len(passages) <= 1:
        return list(passages[:k])
    relevance = _scaled([_ranking_score(p) for p in passages])
    vectors = _unit_rows(passages)
    similarity = vectors @ vectors.T
    chosen: list[int] = []
    closest = np.full(len(passages), -np.inf)  # highest similarity to anything chosen so far
    while len(chosen) < min(k, len(passages)):
        redundancy = np.where(np.isfinite(closest), closest, 0.0)
        value = (1 - diversity) * relevance - diversity * redundancy
        value[chosen] = -np.inf
        best = int(np.argmax(value))  # ties: the better-ranked candidate (first index)
        chosen.append(best)
        closest = np.maximum(closest, similarity[best])
    return [passages[i] for i in chosen]


def _ranking_score(passage: Passage) -> float:
    return passage.rerank_score if passage.rerank_score is not None else passage.score


def _scaled(scores: list[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.ones_like(values)


def _unit_rows(passages: Sequence[Passage]) -> np.ndarray:
    """One normalised row per passage; a passage without a stored vector is similar to nothing."""
    dim = next((len(p.vector) for p in passages if p.vector is not None), 1)
    rows = np.zeros((len(passages), dim), dtype=np.float64)
    for i, passage in enumerate(passages):
        if passage.vector is not None:
            rows[i] = passage.vector
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms
