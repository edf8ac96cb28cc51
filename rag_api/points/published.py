"""What the writer of a deployment of replicas publishes of each collection, and its readers follow
(rag_api.replicas.pointers): the physical collection and the embedder of its vectors, taken
together, and a version that changes with every write."""

from __future__ import annotations

from dataclasses import dataclass

from rag_api.config import EmbedderConfig

# where a node runs its model: its own, whatever the writer's (the vectors do not change)
PLACEMENT = ("device", "precision", "batch_size", "base_url", "api_key_env")


def vectors_of(embedder: EmbedderConfig) -> tuple:
    """What makes two embedders' vectors the same."""
    e = embedder
    return (e.provider, e.model, e.dim, e.query_prefix, e.document_prefix, e.runtime)


@dataclass(frozen=True)
class Published:
    physical: str
    embedder: EmbedderConfig
    version: tuple[str, int]  # the writer process, and its count of write sections

    def followed(self, mine: EmbedderConfig) -> EmbedderConfig | None:
        """The embedder a reader configured with `mine` takes now (None: keep `mine`): the
        writer's, placed as the reader places its own when the provider stays."""
        if vectors_of(self.embedder) == vectors_of(mine):
            return None
        if self.embedder.provider != mine.provider:
            return self.embedder
        return self.embedder.model_copy(update={k: getattr(mine, k) for k in PLACEMENT})
