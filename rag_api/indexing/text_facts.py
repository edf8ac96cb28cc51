"""What a document's chunks are by their text alone: each chunk's labels as if none of its lines
repeated across the collection, and its BM25 vector. A reading worker works them out beside the
file it read (read_pool), so that the thread that writes only asks the collection's census of
repeated lines (rag_api.points.repetition): the rest of a chunk's labelling is done off it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.indexing.chunking import Chunk, title_line
from rag_api.points.labels import Label, label
from rag_api.store.types import SparseVec


@dataclass(frozen=True, slots=True)
class TextFacts:
    """Per chunk, in order: its labels with nothing repeated, its BM25 vector; for the language
    and chunk size they were worked out with."""

    language: str
    chunk_size: int
    labels: list[Label]
    sparse: list[SparseVec]

    def fit(self, chunks: Sequence[Chunk], language: str, chunk_size: int) -> bool:
        """Whether these are the facts of `chunks` as a collection of `language` and
        `chunk_size` reads them."""
        same_setup = (self.language, self.chunk_size) == (language, chunk_size)
        return same_setup and len(self.labels) == len(self.sparse) == len(chunks)


def text_facts(chunks: Sequence[Chunk], language: str, chunk_size: int) -> TextFacts:
    titles = document_titles(chunks)
    encoder = sparse_encoder(language, chunk_size)
    return TextFacts(
        language,
        chunk_size,
        [label(c.text, language, c.metadata) for c in chunks],
        [encoder.document(c.text, titles.get(c.source)) for c in chunks],
    )


def document_titles(chunks: Sequence[Chunk]) -> dict[str, str]:
    """source -> its title: the one its reader found, else its title line (title_line)."""
    by_source: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_source.setdefault(chunk.source, []).append(chunk)
    titles = {}
    for source, own in by_source.items():
        ordered = sorted(own, key=lambda c: c.chunk_index)
        if (title := ordered[0].title or title_line([c.text for c in ordered])) is not None:
            titles[source] = title
    return titles
