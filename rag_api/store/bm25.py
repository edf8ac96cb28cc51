"""BM25 sparse vectors: term frequencies encoded here with the language's stemmer, IDF in Qdrant."""

from __future__ import annotations

import functools

import qdrant_edge as qe

from rag_api.store.types import SparseVec

LANGUAGES = {"en": "english", "es": "spanish", "it": "italian"}
# BM25 normalises a document's length against avg_len. Chunks cut at 512 characters really hold
# 32-39 tokens after stop words (SciFact, XQuAD-es, SQuAD-it; 0.09-0.10 per character, tails are
# short), but this larger avg_len (66.5, a softer length normalisation) ranks better on all three:
# sparse nDCG@10 0.6638 / 0.9600 / 0.8246 against 0.6599 / 0.9573 / 0.8196 at the true mean.
AVG_TOKENS_PER_CHAR = 0.13


class SparseEncoder:
    """Documents get BM25 term-frequency weights (k1, b, avg_len); queries get 1 per distinct term."""

    def __init__(self, language: str, chunk_size: int = 512) -> None:
        self.language = language
        config = qe.Bm25Config(
            language=LANGUAGES.get(language, language),
            avg_len=max(chunk_size * AVG_TOKENS_PER_CHAR, 8.0),
        )
        self._model = qe.Bm25(config)

    def document(self, text: str) -> SparseVec:
        vector = self._model.embed_document(text)
        return SparseVec(list(vector.indices), list(vector.values))

    def documents(self, texts: list[str]) -> list[SparseVec]:
        return [self.document(t) for t in texts]

    def query(self, text: str) -> SparseVec:
        vector = self._model.embed_query(text)
        return SparseVec(list(vector.indices), list(vector.values))

    def terms(self, text: str) -> set[int]:
        """The stemmed, stop-word-free term ids of a text (for lexical overlap)."""
        return set(self._model.embed_query(text).indices)


@functools.lru_cache(maxsize=32)
def sparse_encoder(language: str, chunk_size: int = 512) -> SparseEncoder:
    """One shared encoder per (language, chunk size)."""
    return SparseEncoder(language, chunk_size)
