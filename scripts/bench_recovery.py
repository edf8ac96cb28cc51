"""Cost of the recovery pass a hub makes when it opens a store after an unclean shutdown.

Builds an embedded collection of N points (documents of 100 chunks, 384-dim vectors), a few of
them left holding two versions as a crash between the two operations of a replacement leaves
them, then times, on the same open store: the recovery pass (Collection.recover: four
payload fields of every point, then one delete), against the baseline of the scan every hub
already makes before its first write (ChunkSequence: the `seq` field of every point). Prints the
median of each and the ratio.

    python scripts/bench_recovery.py --points 20000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_api.hub import Hub  # noqa: E402
from rag_api.store import PointData, Selector  # noqa: E402
from scripts.evallib.hub import open_hub  # noqa: E402

CHUNKS = 100  # per document
TORN = 5  # documents holding two versions at each recovery


def build(hub: Hub, points: int) -> str:
    collection = hub.collection("docs")
    physical = collection.writable().physical
    rng = np.random.default_rng(0)
    sparse = collection.sparse.document("tides and reefs")
    for doc in range(points // CHUNKS):
        vectors = rng.random((CHUNKS, 384), dtype=np.float32)
        hub.store.upsert(physical, [_point(doc, n, 1, vectors[n], sparse) for n in range(CHUNKS)])
    hub.store.optimize(physical)
    return physical


def _point(doc: int, n: int, gen: int, vector, sparse) -> PointData:
    payload = {"origin": "api", "source": f"doc{doc}", "text": "tides " * 60, "seq": n}
    return PointData(str(uuid.uuid4()), vector, {**payload, "gen": gen}, sparse)


def tear(hub: Hub, physical: str, gen: int) -> None:
    """Give TORN documents a second, newer version, as a killed replacement leaves them."""
    sparse = hub.collection("docs").sparse.document("tides and reefs")
    vector = np.ones(384, dtype=np.float32)
    points = [_point(doc, n, gen, vector, sparse) for doc in range(TORN) for n in range(CHUNKS)]
    hub.store.upsert(physical, points)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    docs = {"embedder": {"provider": "hash", "model": "b", "dim": 384}}
    with tempfile.TemporaryDirectory() as tmp:
        hub = open_hub(Path(tmp), {"docs": docs}, data_dir=Path(tmp) / "data")
        physical = build(hub, args.points)
        baseline, recovery = [], []
        for run in range(args.runs):
            tear(hub, physical, gen=run + 2)
            started = time.perf_counter()
            list(hub.store.iter_records(physical, Selector(), fields=["seq"]))
            baseline.append(time.perf_counter() - started)
            started = time.perf_counter()
            torn = hub.collection("docs").recover()
            recovery.append(time.perf_counter() - started)
            assert len(torn) == TORN
        hub.close()
    base, rec = statistics.median(baseline), statistics.median(recovery)
    print(f"{args.points} points, {TORN} torn documents, median of {args.runs} runs")
    print(f"  baseline: the seq scan before a first write  {base:.3f} s")
    print(f"  recovery pass (scan 4 fields + 1 delete)     {rec:.3f} s   ratio {rec / base:.2f}")


if __name__ == "__main__":
    main()
