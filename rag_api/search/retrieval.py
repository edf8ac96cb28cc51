"""Search a collection: dense, BM25 sparse or hybrid (fused by the hub), filtered before anything
else; thresholds and the order of work: docs/architecture.md, "search"."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_api.config import EmbedderConfig, Mode, RetrievalConfig
from rag_api.embedding.languages import knows_language
from rag_api.observability.metrics import observe_stages
from rag_api.payload import SOURCE_FIELDS, extract_source
from rag_api.points.collection import Collection
from rag_api.search.diversity import candidate_pool, diversify
from rag_api.search.evidence import with_source_evidence
from rag_api.search.passage import Passage
from rag_api.search.rerank import active_reranker, rerank
from rag_api.store import Hit, SearchSpec, Selector, search_plan, search_sides


@dataclass(frozen=True)
class SearchRequest:
    query: str
    top_k: int | None = None
    threshold: float | None = None
    mode: Mode | None = None
    sources: tuple[str, ...] | None = None
    source_prefix: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    relative_threshold: float | None = None
    rerank: bool | None = None
    diversity: float | None = None
    # labels (docs/labels.md): the chunk types allowed and the minimum quality; None: the
    # collection's retrieval.types and retrieval.min_quality
    types: tuple[str, ...] | None = None
    min_quality: float | None = None
    # what `rag-hub eval` varies: settings tried instead of the collection's before they are
    # written, and the query's vector embedded once for many tries (by the collection's model)
    settings: RetrievalConfig | None = None
    vector: tuple[float, ...] | None = None

    def selector(self, cfg: RetrievalConfig) -> Selector:
        """The points this request may return; the labels' defaults come from `cfg`."""
        return Selector(
            sources=self.sources,
            source_prefix=self.source_prefix,
            metadata=dict(self.metadata),
            types=tuple(cfg.types) if self.types is None else self.types,
            min_quality=cfg.min_quality if self.min_quality is None else self.min_quality,
        )


@dataclass
class SearchOutcome:
    passages: list[Passage]
    mode: Mode
    timings_ms: dict[str, float]
    warning: str | None = None


def search(collection: Collection, request: SearchRequest) -> SearchOutcome:
    """The passages that answer a query, best first, filters and thresholds applied."""
    cfg = request.settings or collection.cfg.retrieval
    top_k = request.top_k or cfg.top_k
    threshold = cfg.threshold if request.threshold is None else request.threshold
    relative = (
        cfg.relative_threshold if request.relative_threshold is None else request.relative_threshold
    )
    diversity = cfg.diversity if request.diversity is None else request.diversity
    evidence = cfg.source_evidence
    reranker = active_reranker(collection.name, collection.cfg.rerank, request.rerank)
    mode: Mode = request.mode or cfg.mode
    timings: dict[str, float] = {}
    selector = request.selector(cfg)
    target = collection.searchable()
    if target is None or selector.selects_nothing:
        return SearchOutcome([], mode, timings)
    wants_dense, wants_sparse = search_sides(mode, target.info)
    started = time.perf_counter()
    dense = _query_vector(collection, request, target.embedder) if wants_dense else None
    sparse = collection.sparse.query(request.query) if wants_sparse else None
    timings["embed"] = _ms(started)
    pool = max(top_k, reranker.candidates if reranker else 0)
    if diversity > 0:
        pool = max(pool, candidate_pool(top_k, cfg.candidates))
    # a source's other chunks are found among the best fused candidates, read by their source only
    ranked = max(pool, cfg.evidence_candidates) if evidence > 0 else pool
    spec = SearchSpec(
        limit=ranked,
        dense=dense,
        sparse=sparse,
        selector=selector,
        candidates=max(cfg.candidates, ranked),
        fusion=cfg.fusion,
        rrf_k=cfg.rrf_k,
        with_dense=diversity > 0,
        weighting=side_weighting(cfg.side_weights, target.embedder, collection.cfg.language),
        complete=cfg.complete_scores,
        fields=SOURCE_FIELDS if evidence > 0 else None,
    )
    if (plan := search_plan(spec, target.info)) is None:
        return SearchOutcome([], mode, timings)  # nothing but stop words
    mode = plan
    started = time.perf_counter()
    if evidence > 0:  # ranked by their sources, then read whole in the state the search saw

        def keep(hits: list[Hit]) -> list[Hit]:
            above = _above(hits, mode, threshold)
            return _with_evidence(above, evidence, cfg.evidence_candidates)[:pool]

        hits = collection.search(target, spec, keep)
    else:
        hits = _above(collection.search(target, spec), mode, threshold)
    timings["search"] = _ms(started)
    passages = [Passage.from_hit(hit, collection.name) for hit in hits]
    warning = None
    if reranker is not None:
        started = time.perf_counter()
        passages, warning = rerank(
            collection.rerankers, reranker, request.query, passages, collection.cfg.language
        )
        timings["rerank"] = _ms(started)
    if diversity > 0:
        passages = diversify(passages, diversity, top_k)
    if relative > 0 and passages:
        best = max(_primary(p, mode) for p in passages)
        passages = [p for p in passages if _primary(p, mode) >= relative * best]
    observe_stages(collection.name, timings)
    return SearchOutcome(passages[:top_k], mode, timings, warning)


def _query_vector(
    collection: Collection, request: SearchRequest, embedder: EmbedderConfig
) -> list[float]:
    if request.vector is not None:
        return list(request.vector)
    return collection.embed_query(request.query, embedder).tolist()


def side_weighting(setting: str, embedder: EmbedderConfig, language: str) -> str:
    """The fusion's side weights for a collection in `language` searched with `embedder`: `auto`
    is equal when the model knows the language (both sides are good: equal weights won there,
    SQuAD-it with e5 0.8807 -> 0.8913), else standout_spread (its cosines may not tell passages
    apart: MiniLM on SQuAD-it, equal weights 0.7951, standout_spread 0.8315, BM25 alone 0.8331)."""
    if setting != "auto":
        return setting
    return "equal" if knows_language(embedder, language) else "standout_spread"


def _with_evidence(hits: list[Hit], share: float, best: int) -> list[Hit]:
    """The `best` first hits ranked by their source's evidence (their payloads hold the source
    only), the others after them in fused order: a passage's place does not depend on top_k."""
    ranked = with_source_evidence(
        hits[:best], share, lambda h: extract_source(h.payload), lambda h: h.score
    )
    for hit, score in ranked:
        hit.score = score
    return [hit for hit, _ in ranked] + hits[best:]


def _above(hits: list[Hit], mode: Mode, threshold: float) -> list[Hit]:
    """The hits whose cosine reaches the threshold (all of them in sparse mode: no cosine)."""
    if mode == "sparse":
        return hits
    return [h for h in hits if h.dense_score is not None and h.dense_score >= threshold]


def _primary(passage: Passage, mode: Mode) -> float:
    if mode == "sparse":
        return passage.sparse_score or 0.0
    return passage.dense_score or 0.0


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
