"""Retrieval latency over real HTTP (generate=false) vs the raw model + raw Qdrant query, same run.

Builds a collection of N chunks (default 20,000) in the embedded store: SciFact chunks embedded with
MiniLM, expanded to N points by jittered copies of those vectors (the latency of a search depends on
the number and spread of vectors, not on which text they came from; embedding 20k chunks would take
~10 minutes). Then, for SciFact queries:
  raw   : SentenceTransformer.encode(query) and EdgeShard.query(...) on a copy of the shard, in-process;
  hub   : POST /query/bench {"generate": false} to `rag-hub serve` in a subprocess, over loopback.
Two patterns: back to back (each side in its own block; target: hub dense p50 < 12 ms at 20k
chunks), and spaced 50 ms apart like real traffic, raw and hub alternating query by query so both
see the same machine conditions (idle torch threads are slow to wake; see SentenceTransformerEmbedder).
Prints p50/p95 of each, the hub's overhead in ms and the hub/raw ratio.

    python scripts/bench_query.py --chunks 20000 --queries 200
"""

from __future__ import annotations

import argparse
import os
import shutil
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
from rag_api.payload import point_id  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from rag_api.store import PointData  # noqa: E402
from scripts.evallib import default_data_dir, latency_summary, load_dataset  # noqa: E402
from scripts.evallib.server import hub_server  # noqa: E402

PAUSE_S = 0.05
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


class Raw:
    """The baseline: the same model's encode() and the engine's own query, on a copy of the shard
    (the hub's server owns the original)."""

    def __init__(self, hub: Hub, copy_to: Path) -> None:
        """Takes the hub's model and a copy of its shard, then closes the hub."""
        collection = hub.collection("bench")
        self.model = collection.embeddings.get(collection.cfg.embedder)._model
        shard_dir = hub.settings.qdrant_path / collection.info(refresh=True).physical
        hub.close()
        shutil.copytree(shard_dir, copy_to)
        self.shard = qe.EdgeShard.load(str(copy_to))

    def query(self, text: str) -> tuple[float, float]:
        """Seconds to embed, seconds to search."""
        started = time.perf_counter()
        vector = self.model.encode([text], normalize_embeddings=True)[0]
        embedded = time.perf_counter()
        self.shard.query(
            qe.QueryRequest(
                limit=5, query=qe.Query.Nearest(vector.tolist(), using="dense"), with_payload=True
            )
        )
        return embedded - started, time.perf_counter() - embedded


def timed_post(client: httpx.Client, query: str, mode: str) -> float:
    body = {"query": query, "generate": False, "mode": mode}
    started = time.perf_counter()
    response = client.post("/query/bench", json=body)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


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
        raw = Raw(hub, Path(tmp) / "raw-shard")
        for query in queries[:20]:
            raw.query(query)  # warm up
        raw_steps = [raw.query(query) for query in queries]
        hub_runs: dict[str, list[float]] = {}
        spaced: dict[str, list[float]] = {"raw": [], "hub": []}
        with (
            hub_server(config, settings.data_dir, args.port) as url,
            httpx.Client(base_url=url, timeout=30) as client,
        ):
            for mode in ("dense", "hybrid"):
                for query in queries[:20]:
                    timed_post(client, query, mode)
                hub_runs[mode] = [timed_post(client, query, mode) for query in queries]
            # Spaced like real traffic, raw and hub alternating so both see the same conditions.
            for query in queries:
                time.sleep(PAUSE_S)
                spaced["raw"].append(sum(raw.query(query)))
                time.sleep(PAUSE_S)
                spaced["hub"].append(timed_post(client, query, "dense"))

    embed = latency_summary([step[0] for step in raw_steps])
    search = latency_summary([step[1] for step in raw_steps])
    print(f"{args.chunks} chunks, {len(queries)} SciFact queries, top_k 5, MiniLM on CPU")
    print("back to back:")
    print(
        f"  raw embed (encode)         p50 {embed['p50_ms']:6.2f} ms  p95 {embed['p95_ms']:6.2f} ms"
    )
    print(
        f"  raw Qdrant dense query     p50 {search['p50_ms']:6.2f} ms  p95 {search['p95_ms']:6.2f} ms"
    )
    raw_p50 = embed["p50_ms"] + search["p50_ms"]
    for mode, latencies in hub_runs.items():
        hub_s = latency_summary(latencies)
        print(
            f"  hub HTTP {mode:<7} end-to-end p50 {hub_s['p50_ms']:6.2f} ms  p95 {hub_s['p95_ms']:6.2f} ms"
            f"  ({hub_s['p50_ms'] - raw_p50:+.2f} ms vs raw embed + dense query)"
        )
    raw_s, hub_s = latency_summary(spaced["raw"]), latency_summary(spaced["hub"])
    print(f"{PAUSE_S * 1000:.0f} ms apart (a voice turn is seconds apart), alternating:")
    print(
        f"  raw embed + dense query    p50 {raw_s['p50_ms']:6.2f} ms  p95 {raw_s['p95_ms']:6.2f} ms"
    )
    print(
        f"  hub HTTP dense end-to-end  p50 {hub_s['p50_ms']:6.2f} ms  p95 {hub_s['p95_ms']:6.2f} ms"
        f"  (ratio hub/raw {hub_s['p50_ms'] / raw_s['p50_ms']:.2f})"
    )


if __name__ == "__main__":
    main()
