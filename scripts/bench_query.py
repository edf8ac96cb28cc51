"""Retrieval latency over real HTTP (generate=false) vs the raw model + raw Qdrant query, same run.

Builds a collection of N chunks (default 20,000) in the embedded store: SciFact chunks embedded with
MiniLM, expanded to N points by jittered copies of those vectors (the latency of a search depends on
the number and spread of vectors, not on which text they came from; embedding 20k chunks would take
~10 minutes). Then, for SciFact queries:
  raw   : SentenceTransformer.encode(query) and EdgeShard.query(...) on the same shard, in-process;
  hub   : POST /query/bench {"generate": false} to `rag-hub serve` in a subprocess, over loopback.
Prints p50/p95 of each, and the hub's overhead in ms (target: hub dense p50 < 12 ms at 20k chunks).

    python scripts/bench_query.py --chunks 20000 --queries 200
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import qdrant_edge as qe  # noqa: E402  (the raw baseline talks to the engine directly)

from rag_api.chunking import split_text  # noqa: E402
from rag_api.config import ChunkingConfig, load_config  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from rag_api.store import PointData, point_id  # noqa: E402
from scripts.evallib import default_data_dir, latency_summary, load_dataset  # noqa: E402

MODEL = {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2", "dim": 384}


def build(hub: Hub, chunks_wanted: int, data_dir: Path, seed: int = 0) -> list[str]:
    """Fill the collection; returns the query texts."""
    dataset = load_dataset("scifact", data_dir)
    collection = hub.collection("bench")
    chunking = ChunkingConfig(size=512, overlap=64)
    texts: list[str] = []
    for doc in dataset.corpus.values():
        texts += split_text(f"{doc.title}\n\n{doc.text}", chunking)
        if len(texts) >= min(2000, chunks_wanted):
            break
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
    return list(dataset.queries.values())


def raw_latencies(hub: Hub, queries: list[str]) -> tuple[list[float], list[float]]:
    collection = hub.collection("bench")
    model = collection.embeddings.get(collection.cfg.embedder)._model
    shard = hub.store._shard(collection.info(refresh=True).physical)  # the engine itself
    embed, search = [], []
    for query in queries:
        started = time.perf_counter()
        vector = model.encode([query], normalize_embeddings=True)[0]
        embed.append(time.perf_counter() - started)
        started = time.perf_counter()
        shard.query(
            qe.QueryRequest(
                limit=5, query=qe.Query.Nearest(vector.tolist(), using="dense"), with_payload=True
            )
        )
        search.append(time.perf_counter() - started)
    return embed, search


def http_latencies(
    config: Path, data: Path, queries: list[str], mode: str, port: int
) -> list[float]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(data),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "rag_api", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if client.get("/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not become ready")
                time.sleep(0.2)
            for query in queries[:20]:  # warm up
                client.post("/query/bench", json={"query": query, "generate": False, "mode": mode})
            latencies = []
            for query in queries:
                started = time.perf_counter()
                response = client.post(
                    "/query/bench", json={"query": query, "generate": False, "mode": mode}
                )
                latencies.append(time.perf_counter() - started)
                response.raise_for_status()
            return latencies
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "collections.yaml"
        entry = {"embedder": MODEL, "retrieval": {"top_k": 5, "threshold": -1}}
        config.write_text(
            yaml.safe_dump({"default_collection": "bench", "collections": {"bench": entry}})
        )
        settings = Settings(config=config, data_dir=Path(tmp) / "data")
        hub = Hub.open(settings, load_config(config))
        queries = build(hub, args.chunks, args.data_dir)[: args.queries]
        for query in queries[:20]:
            raw_latencies(hub, [query])  # warm up
        embed, search = raw_latencies(hub, queries)
        hub.close()
        results = {
            mode: http_latencies(config, settings.data_dir, queries, mode, args.port)
            for mode in ("dense", "hybrid")
        }

    embed_s, search_s = latency_summary(embed), latency_summary(search)
    print(f"{args.chunks} chunks, {len(queries)} SciFact queries, top_k 5, MiniLM on CPU")
    print(
        f"raw embed (encode)       p50 {embed_s['p50_ms']:6.2f} ms  p95 {embed_s['p95_ms']:6.2f} ms"
    )
    print(
        f"raw Qdrant dense query   p50 {search_s['p50_ms']:6.2f} ms  p95 {search_s['p95_ms']:6.2f} ms"
    )
    raw_p50 = embed_s["p50_ms"] + search_s["p50_ms"]
    for mode, latencies in results.items():
        summary = latency_summary(latencies)
        print(
            f"hub HTTP {mode:<7} end-to-end p50 {summary['p50_ms']:6.2f} ms  p95 {summary['p95_ms']:6.2f} ms"
            f"  (overhead over raw embed + dense query: {summary['p50_ms'] - raw_p50:+.2f} ms)"
        )


if __name__ == "__main__":
    main()
