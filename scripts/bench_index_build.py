"""What a search feels while the embedded engine builds a collection's index after a bulk load
(the watcher after a reconcile of 1,000 chunks or more, a restore, a migration).

Each round fills a fresh collection of N points (384-dim, documents of 100 chunks) and builds its
index twice in turn, once per variant, while a thread searches it back to back: the baseline in
place (the engine's call, as before: it holds the interpreter for the whole build) and aside (a
copy indexed by a child process RAG_BATCH_NICE levels down, then swapped in: what the store
does now). Prints per variant the build's seconds, the searches a second during it, the longest
wait of a search (since the one before it ended) and the waits over 50 ms, and the ratios.

    python scripts/bench_index_build.py --points 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_api.settings import Settings  # noqa: E402
from rag_api.store import PointData, SearchSpec  # noqa: E402
from rag_api.store.edge import EdgeStore  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

DIM, CHUNKS = 384, 100


def fill(store: EdgeStore, physical: str, points: int, seed: int) -> np.ndarray:
    store.create_physical(physical, DIM)
    vectors = np.random.default_rng(seed).random((points, DIM), dtype=np.float32)
    for doc in range(points // CHUNKS):
        page = range(doc * CHUNKS, (doc + 1) * CHUNKS)
        payloads = [{"source": f"doc{doc}", "chunk_index": i % CHUNKS, "seq": i} for i in page]
        store.upsert(
            physical,
            [
                PointData(str(uuid.uuid4()), vectors[i], p)
                for i, p in zip(page, payloads, strict=True)
            ],
        )
    return vectors


def build(store: EdgeStore, physical: str, vectors: np.ndarray, aside: bool) -> dict[str, float]:
    """Build the index (aside or in place) while a thread searches; the figures. A search's wait
    is the time since the one before it ended: a search held by the engine's build waits in
    Python before it starts, so its own duration would not show it."""
    info = store.physical_info(physical)
    ended: list[float] = []
    stop = threading.Event()

    def search_on() -> None:
        while not stop.is_set():
            query = vectors[len(ended) % len(vectors)]
            store.search(physical, SearchSpec(limit=5, dense=query), info)
            ended.append(time.perf_counter())

    searcher = threading.Thread(target=search_on)
    searcher.start()
    time.sleep(0.2)  # the searcher running before the build starts
    started = time.perf_counter()
    if aside:
        store.optimize(physical)
    else:
        store.shards.call(physical, "optimize")
    finished = time.perf_counter()
    time.sleep(0.2)
    stop.set()
    searcher.join()
    assert store.shards.call(physical, "info").indexed_vectors_count == len(vectors)
    # every wait that overlaps the build
    waits = [b - a for a, b in pairwise(ended) if b > started and a < finished]
    return {
        "build s": finished - started,
        "searches/s": sum(started < t < finished for t in ended) / (finished - started),
        "longest wait ms": 1000 * max(waits),
        "waits > 50 ms": sum(w > 0.05 for w in waits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    nice = Settings().batch_nice
    rows: dict[str, list[dict[str, float]]] = {"in place": [], "aside": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeStore(Path(tmp) / "qdrant", nice=nice)
        for round_ in range(args.rounds):
            for name in ("in place", "aside") if round_ % 2 == 0 else ("aside", "in place"):
                physical = f"r{round_}-{name.replace(' ', '-')}"
                vectors = fill(store, physical, args.points, seed=round_)
                rows[name].append(build(store, physical, vectors, aside=name == "aside"))
                store.drop_physical(physical)
        store.close()
    print(f"{args.points} points ({DIM}d), {args.rounds} rounds each, medians; child nice {nice}")
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in rows.items()
    }
    for key in medians["aside"]:
        base, new = medians["in place"][key], medians["aside"][key]
        ratio = f"{new / base:.2f}x" if base else "-"
        print(f"  {key:<15} in place {base:>9.1f}   aside {new:>9.1f}   ratio {ratio}")
    print(f"  {machine_line()}")


if __name__ == "__main__":
    main()
