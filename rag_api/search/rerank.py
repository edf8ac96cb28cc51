"""Reranking: a model that reads query and passage together re-scores the candidates.

Configured per collection (`rerank: {provider, model, candidates, enabled}` in collections.yaml):
the search fetches `candidates` passages, the reranker scores each (query, passage) pair and the
best `top_k` by that score are returned, each carrying its `rerank_score` next to its retrieval
scores. `provider: local` (the default) runs a cross-encoder in this process: `model` is a local
folder or a model name in the local Hugging Face cache (the hub never downloads at run time), e.g.
`cross-encoder/ms-marco-MiniLM-L-6-v2`, loaded once per process. `provider: http` asks a rerank
server (rag_api.search.rerank_server); when it fails, the passages keep their retrieval order and
the answer carries a warning.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rag_api.config import RerankConfig
from rag_api.embedding import devices
from rag_api.embedding.embedders import prepare_offline_models
from rag_api.errors import ConfigError, InvalidRequest
from rag_api.search import rerank_server

if TYPE_CHECKING:
    from rag_api.search.passage import Passage

log = logging.getLogger("rag_api.rerank")

BATCH_SIZE = 32


def active_reranker(
    collection: str, cfg: RerankConfig | None, requested: bool | None
) -> RerankConfig | None:
    """The rerank settings a search uses: the collection's default unless the request says."""
    if requested is False or (requested is None and (cfg is None or not cfg.enabled)):
        return None
    if cfg is None:
        raise InvalidRequest(
            f"collection '{collection}' has no rerank model: add a rerank block "
            "(model: a local cross-encoder folder or cached name, or provider: http with the "
            "base_url of a rerank server) in collections.yaml",
            param="rerank",
        )
    return cfg


def rerank(
    cfg: RerankConfig, query: str, passages: Sequence[Passage]
) -> tuple[list[Passage], str | None]:
    """The passages ordered by the reranker's score of (query, passage text), best first (those a
    server left out after them, in retrieval order), and a warning when the server failed."""
    if not passages:
        return [], None
    if cfg.provider == "http":
        try:
            found = rerank_server.scores(cfg, query, [p.text for p in passages])
        except rerank_server.RerankUnavailable as exc:
            log.warning("%s; passages keep their retrieval order", exc)
            return list(passages), f"{exc}: passages are in retrieval order, not reranked"
    else:
        model = load_cross_encoder(cfg.model, cfg.device)
        predicted = model.predict(
            [(query, p.text) for p in passages], batch_size=BATCH_SIZE, show_progress_bar=False
        )
        found = {i: float(score) for i, score in enumerate(predicted)}
    scored = [replace(p, rerank_score=found.get(i)) for i, p in enumerate(passages)]
    ranked = sorted(scored, key=lambda p: (p.rerank_score is None, -(p.rerank_score or 0.0)))
    return ranked, None


def describe_reranker(cfg: RerankConfig | None) -> dict[str, Any] | None:
    """The reranker as status endpoints show it: provider, model, and where it runs (local: its
    device and precision) or its server's circuit (http)."""
    if cfg is None or not cfg.enabled:
        return None
    if cfg.provider == "http":
        circuit = rerank_server.breaker(cfg).describe()
        return {"provider": "http", "model": cfg.model, "circuit": circuit}
    where = devices.concrete(cfg.device, f"rerank model '{cfg.model}'")
    return {"provider": "local", "model": cfg.model, "device": where, "precision": "fp32"}


@functools.lru_cache(maxsize=4)
def load_cross_encoder(model: str, device: str = "auto"):
    """The sentence-transformers CrossEncoder at a local path or cached name, loaded once, on
    `device` (auto: a GPU when torch can use one; cuda without one is a ConfigError)."""
    where = devices.concrete(device, f"rerank model '{model}'")
    prepare_offline_models()
    from sentence_transformers import CrossEncoder

    try:
        loaded = CrossEncoder(model, device=where)
    except Exception as exc:
        raise ConfigError(
            f"rerank model '{model}' cannot be loaded offline ({exc}); give a local folder or a "
            "model in the local Hugging Face cache (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2)"
        ) from exc
    devices.announce(f"rerank model '{model}'", device, where, " (fp32)")
    return loaded
