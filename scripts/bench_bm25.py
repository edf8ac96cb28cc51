"""BM25 query latency through the hub's sparse path vs bm25s on the same chunks, in one run.

For each size, generated chunks (Zipf-distributed pseudo-words, ~512 characters each) are indexed
through `write_documents` into the embedded engine (cached under .bench/), then the same queries
are timed through `retrieval.search(mode="sparse")` (BM25 query encoding, filter-free Qdrant sparse
search with IDF, payloads) and through bm25s (in-memory, English stemmer and stop words). "top-5
agree" is the share of the hub's top 5 chunks that bm25s also ranks top 5 (a fast wrong answer
would not agree; the two tokenise a little differently).

    PYTHONPATH=. python scripts/bench_bm25.py                 # 5,000 and 100,000 chunks
    PYTHONPATH=. python scripts/bench_bm25.py --sizes 20000 --queries 500
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import bm25s
import Stemmer

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.points.collection import Collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.store import Selector
from scripts.evallib import latency_summary
from scripts.evallib.hub import open_hub
from scripts.evallib.paths import BENCH

VOCABULARY = 30_000
WORDS_PER_CHUNK = (45, 95)  # ~512 characters on average; unequal lengths, so scores rarely tie
CHUNKS_PER_SOURCE = 1_000
TOP_K = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cache-dir", type=Path, default=BENCH)
    args = parser.parse_args()
    rng = random.Random(0)
    words = vocabulary(rng)
    queries = [
        " ".join(rng.sample(words[20:5_000], rng.randint(2, 4))) for _ in range(args.queries)
    ]
    print(
        f"{'chunks':>8} {'engine':<22}{'p50 ms':>9}{'p95 ms':>9}{'ratio p50':>11}{'top-5 agree':>13}"
    )
    for size in args.sizes:
        texts = chunks(words, size)
        hub = bench_hub(args.cache_dir / f"bm25-{size}")
        try:
            collection = hub.collection("bench")
            build(collection, texts, hub.settings.data_dir / "index.json")
            hub_total, hub_engine, hub_top = time_hub(collection, queries)
        finally:
            hub.close()
        reference, reference_top = time_bm25s(texts, queries)
        agree = sum(len(a & b) for a, b in zip(hub_top, reference_top, strict=True))
        agreement = f"{agree / (TOP_K * len(queries)):.0%}"
        for name, result, note in (
            ("bm25s", reference, ""),
            ("hub sparse (search)", hub_total, agreement),
            ("  of which Qdrant", hub_engine, ""),
        ):
            ratio = result["p50_ms"] / reference["p50_ms"]
            print(
                f"{size:>8} {name:<22}{result['p50_ms']:>9.2f}{result['p95_ms']:>9.2f}"
                f"{ratio:>10.2f}x{note:>13}"
            )


def vocabulary(rng: random.Random) -> list[str]:
    """Distinct pseudo-words, most frequent first."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choices(letters, k=rng.randint(3, 10)))] = None
    return list(words)


def chunks(words: list[str], count: int) -> list[str]:
    rng = random.Random(count)
    weights = [1 / (rank**1.1) for rank in range(1, len(words) + 1)]  # Zipf, like real text
    return [
        " ".join(rng.choices(words, weights, k=rng.randint(*WORDS_PER_CHUNK))) for _ in range(count)
    ]


def bench_hub(root: Path) -> Hub:
    entry = {
        "language": "en",
        "embedder": {"provider": "hash", "model": "bench", "dim": 8},  # dense side unused
        "retrieval": {"top_k": TOP_K, "mode": "sparse"},
    }
    return open_hub(root, {"bench": entry})


def build(collection: Collection, texts: list[str], marker: Path) -> None:
    """Index the chunks through the hub's ingest path, unless the cache holds them already."""
    wanted = {"chunks": len(texts), "words": list(WORDS_PER_CHUNK)}
    if marker.is_file() and json.loads(marker.read_text()) == wanted:
        return
    started = time.perf_counter()
    writes = []
    for first in range(0, len(texts), CHUNKS_PER_SOURCE):
        source = f"doc-{first // CHUNKS_PER_SOURCE}"
        part = texts[first : first + CHUNKS_PER_SOURCE]
        batch = [Chunk(text, source, first + i) for i, text in enumerate(part)]
        writes.append(DocumentWrite(collection, Selector(sources=(source,)), batch))
    write_documents(collection, writes)
    info = collection.info(refresh=True)
    assert info is not None
    collection.store.optimize(info.physical)
    marker.write_text(json.dumps(wanted))
    print(
        f"  indexed {len(texts)} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr
    )


def time_hub(collection: Collection, queries: list[str]) -> tuple[dict, dict, list[set[int]]]:
    """Latency of the whole search, of its Qdrant part, and each query's top chunk numbers."""
    search(collection, SearchRequest(queries[0], top_k=TOP_K, mode="sparse"))  # warm up
    totals, engine, tops = [], [], []
    for query in queries:
        started = time.perf_counter()
        outcome = search(collection, SearchRequest(query, top_k=TOP_K, mode="sparse"))
        totals.append(time.perf_counter() - started)
        engine.append(outcome.timings_ms["search"] / 1000)
        tops.append({p.chunk_index for p in outcome.passages})
    return latency_summary(totals), latency_summary(engine), tops


def time_bm25s(texts: list[str], queries: list[str]) -> tuple[dict, list[set[int]]]:
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=1.2, b=0.75)  # the parameters of the hub's encoder
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    seconds, tops = [], []
    for query in queries:
        started = time.perf_counter()
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        found, _ = retriever.retrieve(tokens, k=TOP_K, show_progress=False, n_threads=1)
        seconds.append(time.perf_counter() - started)
        tops.append({int(i) for i in found[0]})
    return latency_summary(seconds), tops


if __name__ == "__main__":
    main()
