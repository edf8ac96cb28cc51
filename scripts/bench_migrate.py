#!/usr/bin/env python3
"""Migration throughput against the hub's own ingest of the same chunks, measured in one run.

Prints points/s of: ingest (write_documents + optimize, as `rag-hub index` does: the baseline),
a full migration (re-embed, copy, verify, optimize, swap), and a catch-up scan with nothing left
to copy (what a resumed or repeated migration costs per point), each as a ratio to ingest.
Usage: PYTHONPATH=. python scripts/bench_migrate.py [--points 20000] [--engine edge|memory]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rag_api.config import EmbedderConfig
from rag_api.hub import Hub
from rag_api.ops.migrate.copy import copy_points
from rag_api.ops.migrate.run import plan_migration, run_migration
from scripts.evallib.hub import write_numbered, written_settings

WORDS = "invoice refund printer warranty router backup license invoice tablet cloud".split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--engine", choices=["edge", "memory"], default="edge")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        entry = {"embedder": {"provider": "hash", "model": "small", "dim": 256}}
        url = None if args.engine == "edge" else ":memory:"
        hub = Hub.open(written_settings(Path(tmp), {"b": entry}, qdrant_url=url))
        collection = hub.collection("b")

        started = time.perf_counter()
        write_numbered(collection, args.points, _text)
        hub.store.optimize(collection.info(refresh=True).physical)
        ingest = args.points / (time.perf_counter() - started)

        target = EmbedderConfig(provider="hash", model="large", dim=384)
        started = time.perf_counter()
        result = run_migration(hub, plan_migration(hub, "b", target))
        migrate = args.points / (time.perf_counter() - started)

        started = time.perf_counter()
        stats = copy_points(result.previous, collection, result.live)  # everything already there
        scan = args.points / (time.perf_counter() - started)
        assert stats.embedded == 0, stats
        hub.close()
    print(f"engine {args.engine}, {args.points} points (hash embedder, 256d -> 384d)")
    print(f"ingest (baseline)   {ingest:9.0f} points/s  1.00")
    print(
        f"migration           {migrate:9.0f} points/s  {migrate / ingest:.2f}  ({result.passes} passes)"
    )
    print(f"catch-up scan       {scan:9.0f} points/s  {scan / ingest:.2f}")


def _text(n: int) -> str:
    return " ".join(WORDS[(n * 7 + k) % len(WORDS)] + str((n + k) % 97) for k in range(40))


if __name__ == "__main__":
    main()
