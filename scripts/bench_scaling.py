"""Replicas and sizing (docs/scaling.md): what a reader pays for coherence, side by side with
RAG_ROLE=all, and what one hub process serves per core at 20k and 100k chunks.

The chunks are bench_voice's: its populated `docs` collection (10,000 SciFact chunks, MiniLM on
ONNX, hybrid), read from --source (run bench_voice once first). No model is asked to embed them
again: larger collections are the same points with new ids and their dense vectors nudged
(Gaussian noise, sigma 0.01, renormalised), so the graph is not a set of exact duplicates.

Part 1, `reader`: one qdrant-client in local mode holds the 10k points (these machines run no
Qdrant server; its dense side only: it scores sparse vectors in Python), shared by the hubs of
this process behind one lock; in turns, a hub with
RAG_ROLE=all, and a reader (its writer beside it, publishing) answer POST /v1/rag/context over
HTTP, one caller, questions never asked before. The ratio reader/all of the p50 and p95 is the
per-request cost of coherence (following the writer's published version, shared keys).

Part 2, `sizing`: the embedded engine (the Qdrant engine in-process, RAG_ROLE=all) with 20k and
100k chunks, `rag-hub serve` in a child process, two callers for --seconds: turns per second,
the server's CPU seconds (turns per CPU-second = per core), its resident memory, and the store's
size on disk.

    RAG_EVAL_DATA=/work/shared/eval-data HF_HUB_OFFLINE=1 python scripts/bench_scaling.py
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import threading
import uuid
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qdrant_client import QdrantClient  # noqa: E402

from rag_api.config import read_yaml  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.replicas.pointers import Publisher  # noqa: E402
from rag_api.replicas.shared_keys import SharedKeys  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from rag_api.store import PointData, Store  # noqa: E402
from rag_api.store.remote import RemoteStore  # noqa: E402
from scripts.bench_voice import (  # noqa: E402
    Questions,
    call_context,
    over_http,
    question_pool,
    settings_for,
)
from scripts.evallib import default_data_dir, latency_summary, load_dataset  # noqa: E402
from scripts.evallib.hub import written_settings  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.server import app_server, free_port, hub_server  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

NOISE = 0.01


def stored_points(source: Path) -> list[PointData]:
    """Every point of bench_voice's `docs` collection, whole (dense, sparse, payload)."""
    hub = Hub.open(settings_for(source))
    try:
        info = hub.collection("docs").info()
        if info is None or info.points < 1000:
            raise SystemExit(f"no populated docs collection in {source}: run bench_voice first")
        return [p for page in hub.store.export(info.physical) for p in page.points()]
    finally:
        hub.close()


def grown(points: list[PointData], target: int) -> list[PointData]:
    """`target` points: the stored ones, then copies with new ids and nudged vectors."""
    rng = np.random.default_rng(7)
    out = list(points[:target])
    copy = 0
    while len(out) < target:
        copy += 1
        for p in points[: target - len(out)]:
            dense = np.asarray(p.dense, dtype=np.float32)
            dense = dense + rng.normal(0, NOISE, dense.shape).astype(np.float32)
            dense /= np.linalg.norm(dense)
            payload = {**p.payload, "source": f"{p.payload.get('source')}~{copy}"}
            pid = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{p.id}/{copy}"))
            out.append(PointData(pid, dense.tolist(), payload, p.sparse))
    return out


def load(store: Store, points: list[PointData]) -> None:
    physical = store.ensure("docs", len(points[0].dense)).physical
    for start in range(0, len(points), 512):
        store.upsert(physical, points[start : start + 512])
    store.optimize(physical)


def dense_settings(root: Path) -> Settings:
    """The shipped `docs` collection searching its dense vectors only: qdrant-client's local mode
    scores sparse vectors in Python (~0.8 s a query at 10k chunks), its dense side in numpy."""
    shipped = read_yaml((REPO / "collections.yaml").read_text(), REPO / "collections.yaml")
    docs = shipped["collections"]["docs"]
    retrieval = {**docs.get("retrieval", {}), "mode": "dense"}
    chosen = {**docs, "kb": None, "llm": {"provider": "extractive"}, "retrieval": retrieval}
    return written_settings(root, {"docs": chosen})


def reader_part(args: argparse.Namespace, points: list[PointData], queries: Questions) -> None:
    client, guard = QdrantClient(location=":memory:"), threading.RLock()

    def store() -> RemoteStore:
        return RemoteStore.sharing(client, guard, "qdrant (one local-mode client)")

    load(store(), points[: args.reader_chunks])
    work = args.data_dir / "reader"
    shutil.rmtree(work, ignore_errors=True)
    base = dense_settings(work)

    def opened(role: str) -> tuple[Hub, Settings]:
        node = base.model_copy(
            update={
                "data_dir": work / role,
                "qdrant_url": "http://qdrant.local:6333",
                "role": role,
                "port": free_port(),
                "writer_url": "http://127.0.0.1:9",
            }  # fmt: skip
        )
        hub = Hub.open(node, store=store())
        hub.load_models()
        return hub, node

    (alone, alone_settings), (reader, reader_settings) = opened("all"), opened("reader")
    # what a writer does at its start: create the keys document, publish the collection
    SharedKeys(store().system, work / "keys.json", imports=True).stamp()
    Publisher(store().system).publish(alone.collections["docs"])
    times: dict[str, list[float]] = {"RAG_ROLE=all": [], "reader": []}
    try:
        with (
            app_server(alone_settings, alone) as first,
            app_server(reader_settings, reader) as second,
        ):
            urls = {"RAG_ROLE=all": first, "reader": second}
            clients = {label: httpx.Client(base_url=url, timeout=30) for label, url in urls.items()}
            for http in clients.values():  # warm-up
                for _ in range(5):
                    call_context(http, next(queries), _record())
            for n in range(args.pairs):  # request by request, in turns, the order alternating
                for label in sorted(clients, reverse=n % 2 == 1):
                    record = _record()
                    call_context(clients[label], next(queries), record)
                    times[label] += record["total"]
    finally:
        alone.close()
        reader.close()
    print(
        f"\nreader vs all: {args.reader_chunks} chunks, local-mode Qdrant (dense), one caller, "
        "/v1/rag/context, request by request in turns"
    )
    print(f"{'':<16}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}")
    for label, taken in times.items():
        s = latency_summary(taken)
        print(f"{label:<16}{len(taken):>6}{s['p50_ms']:>9.2f}{s['p95_ms']:>9.2f}")
    a, r = (latency_summary(times[k]) for k in times)
    print(f"reader/all: p50 {r['p50_ms'] / a['p50_ms']:.3f}x, p95 {r['p95_ms'] / a['p95_ms']:.3f}x")
    paired = np.asarray(times["reader"]) - np.asarray(times["RAG_ROLE=all"])
    print(f"reader - all, median of the pairs: {np.median(paired) * 1000:+.2f} ms")


def _record() -> dict[str, list[float]]:
    return {"total": [], "embed": [], "search": [], "http": []}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def size_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def sizing_part(args: argparse.Namespace, points: list[PointData], queries: Questions) -> None:
    print(f"\nsizing: embedded engine, RAG_ROLE=all, {args.callers} callers, {args.seconds:.0f} s")
    print(
        f"{'chunks':>8}{'turns/s':>9}{'turns/CPU-s':>13}{'p50 ms':>8}{'RSS MiB':>9}{'disk MiB':>10}"
    )
    for target in args.sizes:
        work = args.data_dir / f"sizing-{target}"
        settings = settings_for(work)
        if not settings.qdrant_path.exists():
            hub = Hub.open(settings)
            try:
                load(hub.store, grown(points, target))
            finally:
                hub.close()
        with hub_server(settings.config, settings.data_dir, free_port()) as url:
            pid = _pid(settings.qdrant_path)
            over_http(url, queries, 1, 3)  # warm-up: models and the engine's pages
            cpu0 = cpu_seconds(pid)
            record, _ = over_http(url, queries, args.callers, args.seconds)
            cpu = cpu_seconds(pid) - cpu0
            turns = len(record["total"])
            p50 = latency_summary(record["total"])["p50_ms"]
            print(
                f"{target:>8}{turns / args.seconds:>9.1f}{turns / cpu:>13.1f}{p50:>8.1f}"
                f"{rss_mib(pid):>9.0f}{size_mib(settings.qdrant_path):>10.0f}",
                flush=True,
            )


def _pid(store: Path) -> int:
    """The server's process, from the record it keeps beside the embedded store's lock."""
    return int(json.loads((store / "server.json").read_text())["pid"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=BENCH / "voice", help="bench_voice's data")
    parser.add_argument("--data-dir", type=Path, default=BENCH / "scaling")
    parser.add_argument("--part", choices=["reader", "sizing", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pairs", type=int, default=600, help="reader: requests to each")
    parser.add_argument("--reader-chunks", type=int, default=2000)
    parser.add_argument("--callers", type=int, default=2, help="sizing: callers at once")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the in-process servers' request lines
    print(machine_line())
    corpus = [d.titled for d in load_dataset("scifact", default_data_dir()).corpus.values()]
    queries = Questions(question_pool(default_data_dir(), corpus))
    points = stored_points(args.source)
    print(f"{len(points)} stored points read from {args.source}")
    if args.part in ("reader", "both"):
        reader_part(args, points, queries)
    if args.part in ("sizing", "both"):
        sizing_part(args, points, queries)


if __name__ == "__main__":
    main()
