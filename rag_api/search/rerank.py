"""Cross-encoder reranking: a model that reads query and passage together re-scores the candidates.

Configured per collection (`rerank: {model, candidates, enabled}` in collections.yaml): the search
fetches `candidates` passages, the cross-encoder scores each (query, passage) pair and the best
`top_k` by that score are returned, each carrying its `rerank_score` next to its retrieval scores.
`model` is a local folder or a model name in the local Hugging Face cache (the hub never downloads
at run time), e.g. after `hf download cross-encoder/ms-marco-MiniLM-L-6-v2` on a machine with
access, `model: cross-encoder/ms-marco-MiniLM-L-6-v2`. Each model is loaded once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rag_api.config import RerankConfig
from rag_api.embedding import devices
from rag_api.embedding.embedders import prepare_offline_models
from rag_api.errors import ConfigError, InvalidRequest

if TYPE_CHECKING:
    from rag_api.search.passage import Passage

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
            "(model: a local cross-encoder folder or cached name) in collections.yaml",
            param="rerank",
        )
    return cfg


def rerank(cfg: RerankConfig, query: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages ordered by the cross-encoder's score of (query, passage text), best first."""
    if not passages:
        return []
    model = load_cross_encoder(cfg.model, cfg.device)
    scores = model.predict(
        [(query, p.text) for p in passages], batch_size=BATCH_SIZE, show_progress_bar=False
    )
    scored = [replace(p, rerank_score=float(s)) for p, s in zip(passages, scores, strict=True)]
    return sorted(scored, key=lambda p: -(p.rerank_score or 0.0))


@functools.lru_cache(maxsize=4)
def load_cross_encoder(model: str, device: str = "auto"):
    """The sentence-transformers CrossEncoder at a local path or cached name, loaded once, on
    `device` (auto: a GPU when torch can use one; cuda without one is a ConfigError)."""
    where = devices.resolve(device, f"rerank model '{model}'")
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
