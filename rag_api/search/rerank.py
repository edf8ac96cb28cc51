"""Reranking: a model that reads query and passage together re-scores the candidates.

Configured per collection (`rerank: {provider, model, candidates, enabled}` in collections.yaml):
the search fetches `candidates` passages, the reranker scores each (query, passage) pair and the
best `top_k` by that score are returned, each carrying its `rerank_score` next to its retrieval
scores. `provider: local` (the default) runs a cross-encoder in this process: `model` is a local
folder or a model name in the local Hugging Face cache (the hub never downloads at run time), e.g.
`cross-encoder/ms-marco-MiniLM-L-6-v2`, loaded once per hub. `provider: http` asks a rerank
server; when it fails, the passages keep their retrieval order and the answer carries a warning.
The models themselves are the hub's (rag_api.llm.rerankers); this module orders the passages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rag_api.config import RerankConfig
from rag_api.errors import InvalidRequest
from rag_api.llm.prompts import pack
from rag_api.llm.rerankers import Rerankers, RerankUnavailable

if TYPE_CHECKING:
    from rag_api.search.passage import Passage

log = logging.getLogger("rag_api.rerank")


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
    rerankers: Rerankers,
    cfg: RerankConfig,
    query: str,
    passages: Sequence[Passage],
    language: str = "en",
) -> tuple[list[Passage], str | None]:
    """The passages ordered by the reranker's score of (query, passage text), best first (those a
    server left out after them, in retrieval order), and a warning in `language` when the server
    failed."""
    if not passages:
        return [], None
    try:
        found = rerankers.get(cfg).scores(query, [p.text for p in passages])
    except RerankUnavailable as exc:
        log.warning("%s; passages keep their retrieval order", exc)
        return list(passages), pack(language).not_reranked.format(reason=exc)
    scored = [replace(p, rerank_score=found.get(i)) for i, p in enumerate(passages)]
    ranked = sorted(scored, key=lambda p: (p.rerank_score is None, -(p.rerank_score or 0.0)))
    return ranked, None
