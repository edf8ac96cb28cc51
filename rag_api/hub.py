"""The hub: configuration, store, embedders and generators, opened once and shared by every entry point."""

from __future__ import annotations

import logging

from rag_api.collection import Collection
from rag_api.config import HubConfig, load_config
from rag_api.embedding import EmbeddingRouter
from rag_api.errors import CollectionDisabled, RagError
from rag_api.generation import GeneratorRouter
from rag_api.rerank import load_cross_encoder
from rag_api.settings import Settings
from rag_api.store import Store, open_store

log = logging.getLogger("rag_api.hub")


class Hub:
    """Everything a request needs. Build with `Hub.open(settings)`; close when done."""

    def __init__(self, settings: Settings, config: HubConfig, store: Store) -> None:
        self.settings = settings
        self.config = config
        self.store = store
        self.embeddings = EmbeddingRouter(settings)
        self.generators = GeneratorRouter(settings)
        self.collections = {
            name: Collection(name, cfg, config.kb_path(name), store, self.embeddings)
            for name, cfg in config.collections.items()
        }

    @classmethod
    def open(cls, settings: Settings, config: HubConfig | None = None) -> Hub:
        """Load collections.yaml and open the store (the embedded one locks its folder)."""
        config = config or load_config(settings.config)
        return cls(settings, config, open_store(settings))

    def collection(self, name: str | None = None, *, enabled_only: bool = True) -> Collection:
        """A configured collection (default_collection when name is None)."""
        name = name or self.config.default_collection
        self.config.collection(name)  # raises CollectionNotFound
        collection = self.collections[name]
        if enabled_only and not collection.cfg.enabled:
            raise CollectionDisabled(name)
        return collection

    def load_models(self) -> dict[str, RagError]:
        """Load every enabled collection's embedder (and reranker), check its real dimension,
        and for remote embedders that they answer now.

        Returns the problems (collection -> error) instead of raising for upstream embedders, so
        the API can start and report them on /ready; a wrong `dim` is a configuration error.
        """
        problems: dict[str, RagError] = {}
        for name, collection in self.collections.items():
            if not collection.cfg.enabled:
                continue
            try:
                self.embeddings.probe(collection.cfg.embedder, name)
                rerank = collection.cfg.rerank
                if rerank is not None and rerank.enabled:
                    load_cross_encoder(rerank.model)
            except RagError as exc:
                if exc.code == "CONFIG_INVALID":
                    raise
                problems[name] = exc
                log.warning("collection %s not ready: %s", name, exc.message)
        return problems

    def close(self) -> None:
        self.store.close()
