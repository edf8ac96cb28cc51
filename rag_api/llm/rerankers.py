"""The rerank models a hub uses: a cross-encoder in this process (`provider: local`) or a rerank
server (`provider: http`, rag_api.llm.rerank_server), built through the provider registry
(rag_api.providers.RERANKERS), one per configuration and hub, each server with its own breaker."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from rag_api.config import RerankConfig
from rag_api.embedding import devices
from rag_api.embedding.embedders import prepare_offline_models
from rag_api.errors import ConfigError
from rag_api.llm.rerank_server import RerankServer, RerankUnavailable
from rag_api.providers import RERANKERS
from rag_api.settings import Settings

log = logging.getLogger("rag_api.rerank")

BATCH_SIZE = 32


class Reranker(ABC):
    """Scores (query, document) pairs: each document's relevance by its index."""

    @abstractmethod
    def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        """Raises RerankUnavailable when it cannot score now (a server down or slow)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """As status endpoints show it: provider, model, and where it runs or its circuit."""


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder at a local path or cached name, loaded at
    construction on `device` (auto: a GPU when torch can use one; cuda without one is a
    ConfigError)."""

    def __init__(self, model: str, device: str = "auto") -> None:
        where = devices.concrete(device, f"rerank model '{model}'")
        prepare_offline_models()
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(model, device=where)
        except Exception as exc:
            raise ConfigError(
                f"rerank model '{model}' cannot be loaded offline ({exc}); give a local folder or "
                "a model in the local Hugging Face cache (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2)"
            ) from exc
        devices.announce(f"rerank model '{model}'", device, where, " (fp32)")
        self.name, self.where = model, where

    def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        predicted = self.model.predict(
            [(query, text) for text in documents], batch_size=BATCH_SIZE, show_progress_bar=False
        )
        return {i: float(score) for i, score in enumerate(predicted)}

    def describe(self) -> dict[str, Any]:
        return local_view(self.name, self.where)


class ServerReranker(Reranker):
    """A model a rerank server runs."""

    def __init__(self, model: str, server: RerankServer) -> None:
        self.name, self.server = model, server

    def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        return self.server.scores(self.name, query, documents)

    def describe(self) -> dict[str, Any]:
        return {"provider": "http", "model": self.name, "circuit": self.server.breaker.describe()}


class Rerankers:
    """One reranker per configuration, built on first use; one server (and breaker) per base URL,
    key and timeouts, with the hub's breaker thresholds (RAG_LLM_FAILURES, RAG_LLM_COOLDOWN_S)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._built: dict[RerankConfig, Reranker] = {}
        self._servers: dict[tuple[Any, ...], RerankServer] = {}
        self._lock = threading.Lock()

    def get(self, cfg: RerankConfig) -> Reranker:
        key = cfg.model_copy(update={"candidates": 0, "enabled": True})  # what builds the model
        with self._lock:
            found = self._built.get(key)
        if found is None:
            found = RERANKERS.build(cfg, self)  # a model loads outside the lock
            with self._lock:
                found = self._built.setdefault(key, found)
        return found

    def server(self, cfg: RerankConfig) -> RerankServer:
        """The rerank server `cfg` names (the registry's `http` factory asks here)."""
        key = (cfg.base_url or "", cfg.api_key_env, cfg.timeouts)
        with self._lock:
            if key not in self._servers:
                self._servers[key] = RerankServer(
                    *key, self.settings.llm_failures, self.settings.llm_cooldown_s
                )
            return self._servers[key]

    def describe(self, cfg: RerankConfig | None) -> dict[str, Any] | None:
        """The reranker as status endpoints show it (None without an enabled rerank block); a
        local model is described without loading it."""
        if cfg is None or not cfg.enabled:
            return None
        if cfg.provider == "local":
            return local_view(
                cfg.model, devices.concrete(cfg.device, f"rerank model '{cfg.model}'")
            )
        return self.get(cfg).describe()


def local_view(model: str, where: str) -> dict[str, Any]:
    """A cross-encoder as status endpoints show it (it runs in fp32 everywhere)."""
    return {"provider": "local", "model": model, "device": where, "precision": "fp32"}


__all__ = ["Reranker", "RerankUnavailable", "Rerankers"]
