"""IR metrics computed the way trec_eval does (ndcg_cut, recall_k, recip_rank cut at k)."""

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

C = TypeVar("C")


@dataclass(frozen=True)
class Evaluation:
    """Per-query and mean scores keyed by metric name, e.g. "ndcg@10"."""

    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]


def rank(hits: Iterable[tuple[str, float]]) -> list[str]:
    """Order doc ids as trec_eval does: score descending, ties by doc id descending."""
    ranked = [doc_id for doc_id, _ in sorted(hits, key=lambda h: (h[1], h[0]), reverse=True)]
    if len(set(ranked)) != len(ranked):
        raise ValueError("a doc id appears twice in one query's results")
    return ranked


def ndcg_at_k(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """trec_eval ndcg_cut: linear gain = grade, discount log2(rank + 1), ideal from qrels grades."""
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    dcg = sum(max(rels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """Relevant (grade > 0) docs in the top k over all relevant docs."""
    relevant = {d for d, g in rels.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant (grade > 0) doc in the top k, else 0."""
    return next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if rels.get(d, 0) > 0), 0.0)


def hit_at_k(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    """1 when a relevant (grade > 0) doc is among the top k, else 0 (hit@1: the first is right)."""
    return float(any(rels.get(d, 0) > 0 for d in ranked[:k]))


def evaluate(
    run: dict[str, list[tuple[str, float]]],
    qrels: dict[str, dict[str, int]],
    ks: Iterable[int] = (10,),
) -> Evaluation:
    """Score `run` against `qrels` at each cutoff in `ks`, averaging over judged queries.

    Run queries absent from qrels are ignored, as in trec_eval. Judged queries missing from the
    run score 0, as with trec_eval -c. Queries whose qrels hold no relevant doc are skipped
    (trec_eval would score them 0 if they appear in the run; none of our datasets has any).
    """
    per_query: dict[str, dict[str, float]] = {}
    for qid, rels in qrels.items():
        if not any(g > 0 for g in rels.values()):
            continue
        ranked = rank(run.get(qid, []))
        per_query[qid] = {
            f"{name}@{k}": fn(ranked, rels, k)
            for k in sorted(set(ks))
            for name, fn in (("ndcg", ndcg_at_k), ("recall", recall_at_k), ("mrr", mrr_at_k))
        }
    if not per_query:
        raise ValueError("qrels hold no query with a relevant doc")
    names = next(iter(per_query.values()))
    mean = {n: math.fsum(s[n] for s in per_query.values()) / len(per_query) for n in names}
    return Evaluation(per_query, mean)


def chunks_to_docs(
    ranked_chunks: Iterable[tuple[C, float]], doc_of: Callable[[C], str]
) -> list[tuple[str, float]]:
    """Collapse chunk hits to docs scored by their best chunk, in first-occurrence order."""
    best: dict[str, float] = {}
    for chunk, score in ranked_chunks:
        doc_id = doc_of(chunk)
        best[doc_id] = max(score, best.get(doc_id, score))
    return list(best.items())


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """Summarise latencies given in seconds as p50/p95/mean milliseconds."""
    if not seconds:
        raise ValueError("no latencies to summarise")
    ms = np.asarray(seconds, dtype=float) * 1000
    p50, p95 = np.percentile(ms, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95), "mean_ms": float(ms.mean())}
