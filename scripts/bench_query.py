"""Retrieval latency over real HTTP (generate=false) vs the raw model + raw Qdrant query, same run.

Builds a collection of N chunks (default 20,000) in the embedded store: SciFact chunks embedded with
MiniLM, expanded to N points by jittered copies of those vectors (the latency of a search depends on
the number and spread of vectors, not on which text they came from; embedding 20k chunks would take
~10 minutes). Then, for SciFact questions (each pass, warm-up included, asks questions no other pass
asked: the hub keeps recent query vectors, and a repeated question would skip the embedding):
  raw   : the runtime's own embedding call (torch: SentenceTransformer.encode; onnx, onnx-int8: the
          tokenizer + onnxruntime session.run) and EdgeShard.query(...) on a copy of the shard,
          in-process;
  hub   : POST /query/bench {"generate": false} to `rag-hub serve` in a subprocess, over loopback.
  store : the hub's Store.search (hybrid, top_k 10) vs the engine's own fused query (two prefetches,
          RRF, payloads) on the same shard, in-process, alternating query by query (target <= 1.5x).
Two patterns: back to back (each side in its own block; target: hub dense p50 < 12 ms at 20k
chunks), and spaced 50 ms apart like real traffic, raw and hub alternating query by query so both
see the same machine conditions (idle torch threads are slow to wake; see SentenceTransformerEmbedder).
Prints p50/p95 of each, the hub's overhead in ms and the hub/raw ratio; each answer's timings_ms
splits the hub's side into embed, search, the Python around them and HTTP/JSON (the round trip
beyond the route's own total; target <= 1 ms).

    python scripts/bench_query.py --chunks 20000 --queries 200 --runtime onnx
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from http.client import HTTPConnection
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import qdrant_edge as qe  # noqa: E402  (the raw baseline talks to the engine directly)

from rag_api.config import load_config  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.payload import point_id  # noqa: E402
from rag_api.search.retrieval import side_weighting  # noqa: E402
from rag_api.store import PointData, SearchSpec  # noqa: E402
from rag_api.store.edge_requests import EXACT_BELOW  # noqa: E402
from rag_api.store.search_plan import hnsw_ef  # noqa: E402
from scripts.evallib import (  # noqa: E402
    add_data_dir,
    first_chunks,
    fresh_questions,
    latency_summary,
    load_dataset,
)
from scripts.evallib.client import connect  # noqa: E402
from scripts.evallib.client import timed_post as post_json  # noqa: E402
from scripts.evallib.hub import MINILM, written_settings  # noqa: E402
from scripts.evallib.paths import MODEL_CACHE  # noqa: E402
from scripts.evallib.server import hub_server  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

PAUSE_S = 0.05
PASSES = ("dense", "hybrid", "spaced")
WARM_UP = 20  # questions per pass, not measured
TOP_K = 10


def build(hub: Hub, chunks_wanted: int, data_dir: Path, seed: int = 0) -> None:
    """Fill the collection."""
    texts = first_chunks(load_dataset("scifact", data_dir), min(2000, chunks_wanted))
    collection = hub.collection("bench")
    print(f"embedding {len(texts)} real chunks ...", flush=True)
    vectors = collection.embed_documents(texts)
    info = collection.writable()
    rng = np.random.default_rng(seed)
    encoder = collection.sparse
    batch: list[PointData] = []
    for n in range(chunks_wanted):
        base = n % len(texts)
        vector = vectors[base] + (rng.normal(0, 0.05, vectors.shape[1]) if n >= len(texts) else 0)
        vector = vector / np.linalg.norm(vector)
        source = f"doc{n // 8}.md"
        payload = {
            "text": texts[base],
            "source": source,
            "chunk_index": n % 8,
            "origin": "file",
            "metadata": {},
        }
        payload["embedder"] = collection.embedder_id
        batch.append(
            PointData(
                point_id("bench", source, n % 8), vector, payload, encoder.document(texts[base])
            )
        )
        if len(batch) == 2000:
            hub.store.upsert(info.physical, batch)
            batch = []
    hub.store.upsert(info.physical, batch)
    hub.store.optimize(info.physical)


class Raw:
    """The baseline: the same model's encode() and the engine's own query, on a copy of the shard
    (the hub's server owns the original)."""

    def __init__(self, hub: Hub, copy_to: Path) -> None:
        """Takes the hub's model and a copy of its shard, then closes the hub."""
        collection = hub.collection("bench")
        self.embed = raw_embed(collection.embedders.get(collection.cfg.embedder))
        self.sparse = collection.sparse
        self.retrieval = collection.cfg.retrieval
        shard_dir = hub.settings.qdrant_path / collection.info(refresh=True).physical
        hub.close()
        shutil.copytree(shard_dir, copy_to)
        self.shard = qe.EdgeShard.load(str(copy_to))
        self.exact = self.shard.info().points_count < EXACT_BELOW

    def query(self, text: str, mode: str = "dense") -> tuple[float, float]:
        """Seconds to embed, seconds to search."""
        started = time.perf_counter()
        vector = self.embed(text)
        sparse = self.sparse.query(text) if mode == "hybrid" else None
        embedded = time.perf_counter()
        if sparse is None:
            request = qe.QueryRequest(
                limit=TOP_K,
                query=qe.Query.Nearest(vector.tolist(), using="dense"),
                with_payload=True,
            )
            self.shard.query(request)
        else:
            hybrid_query(self.shard, vector.tolist(), sparse, self.retrieval, self.exact)
        return embedded - started, time.perf_counter() - embedded


def raw_embed(embedder):
    """The runtime's own call under the hub's embedder: encode() for torch, the tokenizer and
    session.run for ONNX (what the hub adds around them is what this bench measures)."""
    if hasattr(embedder, "_query"):  # OnnxEmbedder: its query session is tokenizer + session.run
        return lambda text: embedder._query.embed([text])[0]
    return lambda text: embedder._model.encode([text], normalize_embeddings=True)[0]


def hybrid_query(shard: qe.EdgeShard, dense: list[float], sparse, retrieval, exact: bool) -> list:
    """The engine's own hybrid query: both sides as prefetches, fused inside, payloads of the top;
    the dense side searched as the hub searches it (exact below EXACT_BELOW points)."""
    side = retrieval.candidates
    params = qe.SearchParams(exact=True) if exact else qe.SearchParams(hnsw_ef=hnsw_ef(side))
    fusion = (
        qe.Fusion.Dbsf() if retrieval.fusion == "dbsf" else qe.Fusion.Rrf(k=retrieval.rrf_k + 1)
    )
    sparse_vector = qe.SparseVector(sparse.indices, sparse.values)
    return shard.query(
        qe.QueryRequest(
            limit=TOP_K,
            prefetches=[
                qe.Prefetch(
                    limit=side,
                    query=qe.Query.Nearest(dense, using="dense"),
                    params=params,
                ),
                qe.Prefetch(limit=side, query=qe.Query.Nearest(sparse_vector, using="bm25")),
            ],
            query=fusion,
            with_payload=True,
        )
    )


def store_vs_engine(hub: Hub, queries: list[str]) -> tuple[list[float], list[float]]:
    """Seconds of the engine's hybrid query and of the hub's Store.search, alternating."""
    collection = hub.collection("bench")
    info = collection.info(refresh=True)
    shard = hub.store.shards.shard(info.physical)  # the engine object the store itself queries
    retrieval = collection.cfg.retrieval
    engine, store = [], []
    for n, text in enumerate(queries):
        dense = collection.embed_query(text, collection.cfg.embedder).tolist()
        sparse = collection.sparse.query(text)
        spec = SearchSpec(
            limit=TOP_K,
            dense=dense,
            sparse=sparse,
            candidates=retrieval.candidates,
            fusion=retrieval.fusion,
            rrf_k=retrieval.rrf_k,
            weighting=side_weighting(
                retrieval.side_weights, collection.cfg.embedder, collection.cfg.language
            ),
            complete=retrieval.complete_scores,  # the search a query makes, as configured
        )
        started = time.perf_counter()
        hybrid_query(shard, dense, sparse, retrieval, info.points < EXACT_BELOW)
        middle = time.perf_counter()
        hub.store.search(info.physical, spec, info)
        if n >= 20:  # warm-up
            engine.append(middle - started)
            store.append(time.perf_counter() - middle)
    return engine, store


def timed_post(client: HTTPConnection, query: str, mode: str) -> tuple[float, dict[str, float]]:
    """Seconds of the round trip, and the answer's own timings_ms."""
    body = {"query": query, "generate": False, "mode": mode}
    elapsed, answer = post_json(client, "/query/bench", body)
    return elapsed, json.loads(answer)["timings_ms"]


def line(label: str, seconds: list[float], extra: str = "") -> dict[str, float]:
    summary = latency_summary(seconds)
    print(f"  {label:<34} p50 {summary['p50_ms']:6.2f} ms  p95 {summary['p95_ms']:6.2f} ms{extra}")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--port", type=int, default=8765)
    add_data_dir(parser)
    parser.add_argument("--runtime", choices=["torch", "onnx", "onnx-int8"], default="onnx")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        embedder = {**MINILM, "runtime": args.runtime}
        entry = {"embedder": embedder, "retrieval": {"top_k": TOP_K, "threshold": -1}}
        # the ONNX export is kept beside the other bench caches: built once, not every run
        settings = written_settings(Path(tmp), {"bench": entry}, model_cache=MODEL_CACHE)
        hub = Hub.open(settings, load_config(settings.config))
        questions = fresh_questions(args.data_dir, PASSES, WARM_UP, args.queries)
        build(hub, args.chunks, args.data_dir)
        engine, store = store_vs_engine(hub, [q for pair in questions.values() for q in pair[1]])
        raw = Raw(hub, Path(tmp) / "raw-shard")
        raw_steps: dict[str, list[tuple[float, float]]] = {}
        for mode in ("dense", "hybrid"):
            warm, measured = questions[mode]
            for query in warm:
                raw.query(query, mode)
            raw_steps[mode] = [raw.query(query, mode) for query in measured]
        hub_runs: dict[str, list[tuple[float, dict[str, float]]]] = {}
        spaced: dict[str, list[float]] = {"raw": [], "hub": []}
        env = {"RAG_MODEL_CACHE": str(MODEL_CACHE)}
        with hub_server(settings.config, settings.data_dir, args.port, env) as url:
            client = connect(url, timeout=30)
            for mode in ("dense", "hybrid"):  # the server has seen none of these questions
                warm, measured = questions[mode]
                for query in warm:
                    timed_post(client, query, mode)
                hub_runs[mode] = [timed_post(client, query, mode) for query in measured]
            # Spaced like real traffic, raw and hub alternating so both see the same conditions.
            warm, measured = questions["spaced"]
            for query in warm:
                raw.query(query)
                timed_post(client, query, "dense")
            for query in measured:
                time.sleep(PAUSE_S)
                spaced["raw"].append(sum(raw.query(query)))
                time.sleep(PAUSE_S)
                spaced["hub"].append(timed_post(client, query, "dense")[0])
            client.close()

    print(
        f"{args.chunks} chunks, {args.queries} SciFact questions a pass (none asked twice), "
        f"top_k {TOP_K}, MiniLM on CPU, runtime {args.runtime}"
    )
    print(machine_line())
    print("store call, in-process, alternating query by query:")
    raw_store = line("raw engine hybrid query", engine)
    hub_store = line("hub Store.search hybrid", store)
    print(f"  ratio hub/raw p50 {hub_store['p50_ms'] / raw_store['p50_ms']:.2f} (target <= 1.5)")
    print("back to back:")
    for mode, latencies in hub_runs.items():  # each pass against raw on its own questions
        line(f"raw embed ({mode} pass)", [step[0] for step in raw_steps[mode]])
        line(f"raw Qdrant {mode} query", [step[1] for step in raw_steps[mode]])
        raw_p50 = line(f"raw embed + {mode} query", [sum(step) for step in raw_steps[mode]])[
            "p50_ms"
        ]
        round_trips = [elapsed for elapsed, _ in latencies]
        ratio = latency_summary(round_trips)["p50_ms"] / raw_p50
        line(
            f"hub HTTP {mode} end-to-end",
            round_trips,
            f"  (ratio {ratio:.2f} to raw embed + {mode} query, {raw_p50:.2f} ms)",
        )
        http = [elapsed - t["total"] / 1000 for elapsed, t in latencies]
        python = [(t["total"] - t["embed"] - t["search"]) / 1000 for _, t in latencies]
        line("  of which HTTP/JSON (target <= 1)", http)
        line("  of which Python around the search", python)
    spaced_raw = latency_summary(spaced["raw"])
    print(f"{PAUSE_S * 1000:.0f} ms apart (a voice turn is seconds apart), alternating:")
    line("raw embed + dense query", spaced["raw"])
    hub_s = latency_summary(spaced["hub"])
    line(
        "hub HTTP dense end-to-end",
        spaced["hub"],
        f"  (ratio hub/raw {hub_s['p50_ms'] / spaced_raw['p50_ms']:.2f})",
    )


if __name__ == "__main__":
    main()
