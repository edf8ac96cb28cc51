"""What searches and writes feel while the embedded engine builds a collection's index after a
bulk load (the watcher after a reconcile of 1,000 chunks or more, a sync, a restore, a migration).

Each round fills a fresh collection of N points (384-dim, documents of 100 chunks) and builds its
index once per variant, in turns, while one thread searches it back to back and another writes
a small document (5 chunks) back to back: in place (the engine's call: it holds the interpreter
for the whole build), aside with its writes held (the code before: a copy indexed by a child
process RAG_BATCH_NICE levels down, then swapped in, the collection's writes waiting for it) and
aside (now: writes paused only while the shard is copied, those made during the build replayed
onto the copy before the swap). Prints per variant the build's seconds, the searches and writes
a second during it, the longest wait of each (a search's since the one before it ended: a search
held by the build waits in Python before it starts) and the ratios against the one before.

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


def build(store: EdgeStore, physical: str, vectors: np.ndarray, variant: str) -> dict[str, float]:
    """Build the index (the variant's way) while a thread searches and another writes; the
    figures over the waits that overlap the build."""
    info = store.physical_info(physical)
    ended: list[float] = []
    writes: list[tuple[float, float]] = []
    stop = threading.Event()

    def search_on() -> None:
        while not stop.is_set():
            query = vectors[len(ended) % len(vectors)]
            store.search(physical, SearchSpec(limit=5, dense=query), info)
            ended.append(time.perf_counter())

    def write_on() -> None:
        while not stop.is_set():
            began, doc = time.perf_counter(), f"written{len(writes)}"
            points = [
                PointData(str(uuid.uuid4()), vectors[i], {"source": doc, "chunk_index": i})
                for i in range(5)
            ]
            store.upsert(physical, points)
            writes.append((began, time.perf_counter()))
            time.sleep(0.01)

    threads = [threading.Thread(target=search_on), threading.Thread(target=write_on)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # both running before the build starts
    started = time.perf_counter()
    if variant == "in place":
        store.shards.call(physical, "optimize")
    elif variant == "aside, writes held":
        with store.shards.writes_paused(physical):
            store.optimize(physical)
    else:
        store.optimize(physical)
    finished = time.perf_counter()
    time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    assert store.shards.call(physical, "info").indexed_vectors_count >= len(vectors)
    assert store.count(physical) == len(vectors) + 5 * len(writes)  # every write kept
    waits = [b - a for a, b in pairwise(ended) if b > started and a < finished]
    written = [b - a for a, b in writes if b > started and a < finished]
    seconds = finished - started
    return {
        "build s": seconds,
        "searches/s": sum(started < t < finished for t in ended) / seconds,
        "search wait ms": 1000 * max(waits),
        "writes/s": sum(started < b < finished for _, b in writes) / seconds,
        "write wait ms": 1000 * max(written),
    }


VARIANTS = ("in place", "aside, writes held", "aside")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    nice = Settings().batch_nice
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeStore(Path(tmp) / "qdrant", nice=nice)
        for round_ in range(args.rounds):
            order = VARIANTS[round_ % 3 :] + VARIANTS[: round_ % 3]
            for name in order:
                physical = f"r{round_}-{name.replace(' ', '-').replace(',', '')}"
                vectors = fill(store, physical, args.points, seed=round_)
                rows[name].append(build(store, physical, vectors, name))
                store.drop_physical(physical)
        store.close()
    print(f"{args.points} points ({DIM}d), {args.rounds} rounds each, medians; child nice {nice}")
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in rows.items()
    }
    print(f"  {'':<15}" + "".join(f"{name:>20}" for name in VARIANTS) + "   aside / held")
    for key in medians["aside"]:
        held, new = medians["aside, writes held"][key], medians["aside"][key]
        ratio = f"{new / held:.2f}x" if held else "-"
        figures = "".join(f"{medians[name][key]:>20.1f}" for name in VARIANTS)
        print(f"  {key:<15}{figures}   {ratio}")
    print(f"  {machine_line()}")


if __name__ == "__main__":
    main()
