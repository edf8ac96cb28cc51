"""A question set asked through `retrieval.search` — the path `/query` takes, rerank and
thresholds included — with given retrieval settings, judged question by question.

Two lists per question. The ranking: the first `depth` passages (the collection's candidates,
at least 10 and k) with the thresholds applied, collapsed to sources (or to "the right chunk"
when the question gives its text); nDCG@10, recall@k, MRR@10 and hit@1 judge its order, as the
benchmarks do (scripts/bench_retrieval.py). The answer: the first `top_k` passages, what an LLM
would be given; none is a "no relevant information" answer, none from a right source a wrong one.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, get_args

from rag_api.config import Fusion, Mode, RetrievalConfig
from rag_api.errors import EvalTooLong
from rag_api.evaluation.questions import Question
from rag_api.evaluation.scoring import hit_at_k, latency_summary, mrr_at_k, ndcg_at_k, recall_at_k
from rag_api.points.collection import Collection
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search

RIGHT, NO_ANSWER, WRONG_SOURCE = "right", "no_answer", "wrong_source"
MAX_DEPTH = 100  # a query's own top_k limit
RIGHT_CHUNK = "\x00right chunk"  # the one relevant unit of a question judged by chunk text
MODES: tuple[Mode, ...] = ("dense", "sparse", "hybrid")
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)


@dataclass(frozen=True)
class Judged:
    """One question's result under one set of settings."""

    score: float  # what --tune maximises: nDCG@10, or for an out-of-scope question 1 if refused
    outcome: str  # right | no_answer | wrong_source
    ndcg: float | None = None  # the ranking metrics: in-scope questions only
    recall: float | None = None
    mrr: float | None = None
    hit1: float | None = None
    first_right: int | None = None  # position of the first right passage (1-based)
    latency_s: float | None = None


@dataclass
class RunResult:
    settings: RetrievalConfig
    judged: list[Judged]

    def summary(self, k: int) -> dict[str, Any]:
        """Means over the in-scope questions; the shares as docs/eval.md defines them."""
        scoped = [j for j in self.judged if j.ndcg is not None]
        latencies = [j.latency_s for j in self.judged if j.latency_s is not None]
        return {
            "mode": self.settings.mode,
            "fusion": self.settings.fusion if self.settings.mode == "hybrid" else None,
            "ndcg@10": _mean(j.ndcg for j in scoped),
            f"recall@{k}": _mean(j.recall for j in scoped),
            "mrr@10": _mean(j.mrr for j in scoped),
            "hit@1": _mean(j.hit1 for j in scoped),
            "no_answer": _mean(float(j.outcome == NO_ANSWER) for j in scoped),
            "wrong_source": _mean(float(j.outcome == WRONG_SOURCE) for j in self.judged),
            "score": _mean(j.score for j in self.judged),
            "p50_ms": round(latency_summary(latencies)["p50_ms"], 2) if latencies else None,
        }

    def hits_within(self, n: int) -> float:
        """Share of in-scope questions with a right passage among the first n."""
        scoped = [j for j in self.judged if j.ndcg is not None]
        return _mean(float(j.first_right is not None and j.first_right <= n) for j in scoped)


def depth(settings: RetrievalConfig, k: int) -> int:
    """Passages ranked per question: the whole fused candidate list, at least 10 and k."""
    return min(MAX_DEPTH, max(settings.candidates, settings.top_k, k, 10))


def run(
    collection: Collection,
    questions: list[Question],
    settings: RetrievalConfig,
    k: int = 10,
    vectors: list[tuple[float, ...]] | None = None,
    deadline: float | None = None,
    timed: bool = False,
    rerank: bool | None = None,
) -> RunResult:
    """Every question through retrieval with `settings` (the ranking search reuses `vectors`,
    embedded once for many settings). `timed`: each question is also asked once exactly as
    `/query` asks it (top_k passages, embedding included), timed, and that answer is judged;
    otherwise the answer is the ranking's first top_k passages — the same list, unless MMR is on
    (it picks its top_k differently, so it is asked for). Past `deadline` (monotonic seconds) it
    raises EvalTooLong. `rerank`: with or without the collection's reranker (None: as set)."""
    judged = []
    for i, question in enumerate(questions):
        if deadline is not None and time.monotonic() > deadline:
            raise EvalTooLong(
                f"the evaluation of {len(questions)} questions takes longer than one request may "
                "(RAG_EVAL_MAX_S): use fewer questions or modes, or run `rag-hub eval` where the "
                "store is"
            )
        vector = vectors[i] if vectors is not None else None
        ranked = search(
            collection,
            SearchRequest(
                question.text,
                top_k=depth(settings, k),
                settings=settings,
                vector=vector,
                rerank=rerank,
            ),
        ).passages
        latency = None
        if timed or settings.diversity > 0:
            started = time.perf_counter()
            answer = search(
                collection,
                SearchRequest(
                    question.text,
                    settings=settings,
                    vector=None if timed else vector,
                    rerank=rerank,
                ),
            ).passages
            latency = time.perf_counter() - started if timed else None
        else:
            answer = ranked[: settings.top_k]
        judged.append(judge(question, ranked, answer, k, latency))
    return RunResult(settings, judged)


def judge(
    question: Question,
    ranked: list[Passage],
    answer: list[Passage],
    k: int,
    latency_s: float | None = None,
) -> Judged:
    """One question's ranking metrics and outcome."""
    right = [question.holds(p.source, p.text) for p in answer]
    if not answer:
        outcome = NO_ANSWER
    else:
        outcome = RIGHT if any(right) else WRONG_SOURCE
    if not question.in_scope:
        refused = float(outcome == NO_ANSWER)
        return Judged(refused, RIGHT if refused else WRONG_SOURCE, latency_s=latency_s)
    units = list(dict.fromkeys(_unit(question, p) for p in ranked))
    if question.by_chunk:
        rels = {RIGHT_CHUNK: 1}
    else:
        rels = dict.fromkeys(question.sources, 1)
    first_right = next(
        (n for n, p in enumerate(ranked, 1) if question.holds(p.source, p.text)), None
    )
    ndcg = ndcg_at_k(units, rels, 10)
    return Judged(
        score=ndcg,
        outcome=outcome,
        ndcg=ndcg,
        recall=recall_at_k(units, rels, k),
        mrr=mrr_at_k(units, rels, 10),
        hit1=hit_at_k(units, rels, 1),
        first_right=first_right,
        latency_s=latency_s,
    )


def _unit(question: Question, passage: Passage) -> str:
    """What the ranking counts: sources, or the right chunk against every other chunk."""
    if not question.by_chunk:
        return passage.source
    if question.holds(passage.source, passage.text):
        return RIGHT_CHUNK
    return f"{passage.source}#{passage.chunk_index}"


def families(current: RetrievalConfig, modes: tuple[str, ...] = MODES) -> list[RetrievalConfig]:
    """The settings of each mode (and each fusion of hybrid), the rest as configured."""
    out = []
    for mode in modes:
        for fusion in FUSIONS if mode == "hybrid" else (current.fusion,):
            out.append(current.model_copy(update={"mode": mode, "fusion": fusion}))
    return out


def label(settings: RetrievalConfig) -> str:
    return f"hybrid/{settings.fusion}" if settings.mode == "hybrid" else settings.mode


def embed_all(
    collection: Collection, questions: list[Question], modes: tuple[str, ...] = MODES
) -> list[tuple[float, ...]] | None:
    """Each question's vector, embedded once for all the settings tried (None: sparse only)."""
    if all(mode == "sparse" for mode in modes):
        return None
    return [tuple(collection.embed_query(q.text).tolist()) for q in questions]


def _mean(values: Any) -> float | None:
    values = list(values)
    return round(math.fsum(values) / len(values), 4) if values else None
