"""What the writer of a deployment of replicas publishes of each collection, and its readers follow
(rag_api.replicas.pointers): the physical collection and the embedder of its vectors, taken
together, and a version that changes with every write."""

from __future__ import annotations

from dataclasses import dataclass

from rag_api.config import EmbedderConfig


@dataclass(frozen=True)
class Published:
    physical: str
    embedder: EmbedderConfig
    version: tuple[str, int]  # the writer process, and its count of write sections
