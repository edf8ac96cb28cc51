"""A retrieved chunk and why it was returned: what retrieval, rerank, diversity and answers pass on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_api.payload import StoredChunk, chunk_ref
from rag_api.store import Hit


@dataclass
class Passage:
    """A retrieved chunk and why it was returned."""

    id: str
    source: str
    chunk_index: int
    score: float
    text: str
    metadata: dict[str, Any]
    origin: str | None = None
    dense_score: float | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    sparse_rank: int | None = None
    rerank_score: float | None = None
    collection: str | None = None  # set where passages of several collections mix (auto)
    home: str | None = None  # the collection it was found in (its id's first part)
    vector: list[float] | None = field(default=None, repr=False, compare=False)
    # the payload it was read from (empty for a passage built by hand)
    stored: StoredChunk = field(default_factory=lambda: StoredChunk({}), repr=False, compare=False)

    @classmethod
    def from_hit(cls, hit: Hit, home: str | None = None) -> Passage:
        """The passage of a search hit in the collection `home`, read through the payload
        schema."""
        stored = StoredChunk(hit.payload)
        return cls(
            id=hit.id,
            source=stored.source,
            chunk_index=stored.chunk_index or 0,
            score=hit.score,
            text=stored.text,
            metadata=stored.metadata,
            origin=stored.origin,
            dense_score=hit.dense_score,
            dense_rank=hit.dense_rank,
            sparse_score=hit.sparse_score,
            sparse_rank=hit.sparse_rank,
            vector=hit.dense,
            stored=stored,
            home=home,
        )

    @property
    def ref(self) -> str | None:
        """Its id wherever a client meets it: `collection:source#chunk_index`."""
        home = self.collection or self.home
        return chunk_ref(home, self.source, self.chunk_index) if home else None

    def as_dict(self) -> dict[str, Any]:
        return {
            **({"id": self.ref} if self.ref else {}),
            "source": self.source,
            "chunk_index": self.chunk_index,
            "score": round(self.score, 6),
            "text": self.text,
            "metadata": self.metadata,
            **({"url": self.stored.url} if self.stored.url else {}),
            **self.stored.labels(),  # type, quality, quality_reasons (none: not labelled)
            "dense_score": _round(self.dense_score),
            "dense_rank": self.dense_rank,
            "sparse_score": _round(self.sparse_score),
            "sparse_rank": self.sparse_rank,
            "rerank_score": _round(self.rerank_score),
            **({"collection": self.collection} if self.collection is not None else {}),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
