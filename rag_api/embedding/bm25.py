"""BM25 sparse vectors: term frequencies encoded here with the language's stemmer, IDF in Qdrant.

The document side is encoded once, at write time, with k1, b and avg_len baked into each weight:
changing any of them (or what text is encoded) raises rag_api.indexing.chunking.SPARSE_VERSION, which
re-indexes kb files (their dense vectors are reused by content hash: only BM25 is recomputed).
"""

from __future__ import annotations

import functools

import qdrant_edge as qe

from rag_api.store.types import SparseVec

LANGUAGES = {"en": "english", "es": "spanish", "it": "italian"}
# BM25 normalises a document's length against avg_len. Chunks cut at 512 characters really hold
# 32-46 tokens after stop words (SciFact, XQuAD-es, SQuAD-it; 0.09-0.10 per character, tails are
# short), but this larger avg_len (66.5, a softer length normalisation) ranks better on all three
# (docs/retrieval.md): the real mean chunk length, measured per collection, was tried and lost.
AVG_TOKENS_PER_CHAR = 0.13
# Term saturation and length normalisation, chosen on the three datasets together (Anserini's
# defaults are 0.9 / 0.4): +0.002-0.003 nDCG@10 on each against Qdrant's 1.2 / 0.75.
K1 = 0.9
B = 0.5


class SparseEncoder:
    """Documents get BM25 term-frequency weights (k1, b, avg_len); queries get 1 per distinct term."""

    def __init__(self, language: str, chunk_size: int = 512) -> None:
        self.language = language
        config = qe.Bm25Config(
            language=LANGUAGES.get(language, language),
            avg_len=max(chunk_size * AVG_TOKENS_PER_CHAR, 8.0),
            k=K1,
            b=B,
        )
        self._model = qe.Bm25(config)

    def document(self, text: str, title: str | None = None) -> SparseVec:
        """A chunk's vector; `title` (its document's title line) is counted with it unless the
        chunk already starts with it, so every chunk of a document matches its title's terms."""
        vector = self._model.embed_document(lexical_text(text, title))
        return SparseVec(list(vector.indices), list(vector.values))

    def documents(
        self, texts: list[str], titles: list[str | None] | None = None
    ) -> list[SparseVec]:
        titles = titles or [None] * len(texts)
        return [self.document(t, title) for t, title in zip(texts, titles, strict=True)]

    def query(self, text: str) -> SparseVec:
        vector = self._model.embed_query(text)
        return SparseVec(list(vector.indices), list(vector.values))

    def terms(self, text: str) -> set[int]:
        """The stemmed, stop-word-free term ids of a text (for lexical overlap)."""
        return set(self._model.embed_query(text).indices)


def lexical_text(text: str, title: str | None) -> str:
    """What BM25 reads of a chunk: its text, after its document's title unless it starts with it."""
    if not title or text.startswith(title):
        return text
    return f"{title}\n\n{text}"


@functools.lru_cache(maxsize=32)
def sparse_encoder(language: str, chunk_size: int = 512) -> SparseEncoder:
    """One shared encoder per (language, chunk size)."""
    return SparseEncoder(language, chunk_size)
