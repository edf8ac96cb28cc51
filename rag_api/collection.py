"""One knowledge base: its configuration, its Qdrant collection, its embedder and its lock."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rag_api import payload
from rag_api.config import CollectionConfig, EmbedderConfig
from rag_api.embedder_dims import offline_problem
from rag_api.embedding import EmbeddingRouter
from rag_api.errors import DimensionMismatch, EmbedderMismatch
from rag_api.locks import ReadWriteLock
from rag_api.sequence import ChunkSequence
from rag_api.store import CollectionInfo, Layout, Selector, SparseEncoder, Store, sparse_encoder

INFO_TTL_S = 1.0  # another process (a migration on a server) may move the alias


class Collection:
    """A hub collection; every read and write of its points goes through here."""

    def __init__(
        self,
        name: str,
        cfg: CollectionConfig,
        kb_path: Path | None,
        store: Store,
        embeddings: EmbeddingRouter,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.kb_path = kb_path
        self.store = store
        self.embeddings = embeddings
        self.lock = ReadWriteLock()
        # Writers share this gate for a whole write (prepare, embed, commit); a migration's final
        # catch-up and alias swap hold it alone, so no write lands between the two.
        self.writes = ReadWriteLock()
        self.sequence = ChunkSequence(store)
        self._info: tuple[float, CollectionInfo | None] | None = None
        self._stored_embedder: tuple[str, str | None] | None = None
        self._indexed: str | None = None  # the physical collection whose indexes are checked

    @property
    def sparse(self) -> SparseEncoder:
        return sparse_encoder(self.cfg.language, self.cfg.chunking.size)

    @property
    def embedder_id(self) -> str:
        return self.cfg.embedder.id

    def info(self, refresh: bool = False) -> CollectionInfo | None:
        """The Qdrant collection behind this name (None before the first write), cached briefly."""
        cached = self._info
        if refresh or cached is None or time.monotonic() - cached[0] > INFO_TTL_S:
            cached = (time.monotonic(), self.store.info(self.name))
            self._info = cached
        return cached[1]

    def invalidate(self) -> None:
        self._info = None
        self._stored_embedder = None

    def readable(self) -> CollectionInfo | None:
        """The collection for a search; a dimension mismatch cannot be searched."""
        info = self.info()
        if info is not None and info.dim != self.cfg.embedder.dim:
            raise DimensionMismatch(self._dimension_message(info))
        if info is not None:
            self.ensure_indexes(info)
            self._same_embedder(info, "queries")  # another model's vectors: meaningless scores
        return info

    def writable(self) -> CollectionInfo:
        """The collection for a write, created on first use; refused when its vectors differ in
        dimension or model from collections.yaml (that needs `rag-hub migrate`)."""
        info = self.info()
        if info is None:
            qdrant = self.cfg.qdrant
            layout = Layout(qdrant.shard_number, qdrant.replication_factor)
            info = self.store.ensure(self.name, self.cfg.embedder.dim, layout)
            self._info = (time.monotonic(), info)
        if info.dim != self.cfg.embedder.dim:
            raise DimensionMismatch(self._dimension_message(info))
        self.ensure_indexes(info)
        self._same_embedder(info, "writes")
        return info

    def _same_embedder(self, info: CollectionInfo, refused: str) -> None:
        stored = self.stored_embedder(info)
        if stored is not None and stored != self.embedder_id:
            raise EmbedderMismatch(
                f"collection '{self.name}' holds vectors of {stored} but collections.yaml configures "
                f"{self.embedder_id}; {refused} are refused until you {self.migrate_hint()} "
                "(or, if another process migrated it, restart with its collections.yaml)"
            )

    def ensure_indexes(self, info: CollectionInfo) -> None:
        """Index the metadata keys collections.yaml lists for filtering (once per process)."""
        wanted = self.cfg.retrieval.metadata_indexes
        if not wanted or self._indexed == info.physical:
            return
        fields = {payload.metadata_path(key): kind for key, kind in wanted.items()}
        # no collection lock: an index changes no point, and may be created while writes wait
        self.store.ensure_payload_indexes(info.physical, fields)
        self._indexed = info.physical

    def stored_embedder(self, info: CollectionInfo) -> str | None:
        """The embedder recorded in the collection's payloads (None when empty or foreign)."""
        cached = self._stored_embedder
        if cached is None or cached[0] != info.physical:
            records, _ = self.store.scroll(info.physical, Selector(), 1, fields=[payload.EMBEDDER])
            value = payload.StoredChunk(records[0].payload).embedder if records else None
            cached = (info.physical, value)
            if records:
                self._stored_embedder = cached
        return cached[1]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.embeddings.documents(self.cfg.embedder, texts)

    def embed_query(self, text: str, embedder: EmbedderConfig | None = None) -> np.ndarray:
        """The query's vector by `embedder` (the one read with the collection's info), else ours."""
        return self.embeddings.query(embedder or self.cfg.embedder, text)

    def _dimension_message(self, info: CollectionInfo) -> str:
        return (
            f"collection '{self.name}' stores {info.dim}-dimensional vectors but collections.yaml "
            f"configures {self.cfg.embedder.dim} ({self.embedder_id}); "
            f"{self.migrate_hint()}"
        )

    def migrate_hint(self) -> str:
        """What to do to move this collection to the configured embedder: run the migration, or
        first correct an embedder its model cannot be (never a command that would fail)."""
        e = self.cfg.embedder
        problem = offline_problem(e)
        if problem is not None:
            return f"correct collections.yaml first ({problem})"
        command = (
            f"rag-hub migrate {self.name} --provider {e.provider} --model {e.model} --dim {e.dim}"
        )
        return f"run `{command}` to re-embed it"
