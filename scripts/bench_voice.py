"""Voice-turn retrieval latency: POST /v1/rag/context over HTTP while the knowledge base is edited.

A voice turn has ~100 ms for retrieval. This measures how much of it the hub uses on the embedded
defaults (qdrant-edge, the shipped `docs` collection: bundled MiniLM, hybrid, top_k 5) with 10,000
SciFact chunks stored: 4 callers ask for context while a fifth upserts documents, against a real
uvicorn server on loopback (a child process). Each request's time is split into embed and store
(the server's timings_ms) and HTTP (what the caller waited beyond the server's own total). The
baselines, measured in the same run: the same retrieval in-process (no HTTP), and one caller
over HTTP with no writer.

    RAG_EVAL_DATA=/work/shared/eval-data HF_HUB_OFFLINE=1 python scripts/bench_voice.py

The populated store is kept in --data-dir (default .bench/voice) and reused by the next run.
Each server has one CPU thread per query embedding (RAG_QUERY_THREADS=1, the default) and differs
in RAG_BATCH_NICE, how far below the queries' OS priority the writer's embedding runs
(rag_api/embedding/batch_threads.py): 0 (the baseline: the same priority) and the default 10; the last
lines compare the two. --rounds N runs the servers in turns N times and pools
their numbers (the machine's other load changes). RAG_QUERY_THREADS=2 is no longer run, to keep
the run short (it lost to 1 under concurrency, see docs/performance.md). Run it at normal priority.

No server is asked one question twice: the hub keeps recent query vectors
(rag_api.embedding.query_vectors), and a repeated question would skip its embedding. The questions are
SciFact's claims, then sentences of its abstracts (claims in the same style), ~40,000 in all.
Every server writes sources of its own, so no upsert finds its vectors stored by an earlier one.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import read_yaml  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.indexing.chunking import Chunk, split_text  # noqa: E402
from rag_api.indexing.ingest import DocumentWrite, write_documents  # noqa: E402
from rag_api.search.retrieval import SearchRequest, search  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from rag_api.store import Selector  # noqa: E402
from scripts.evallib import (  # noqa: E402
    default_data_dir,
    distinct_questions,
    latency_summary,
    load_dataset,
)
from scripts.evallib.baseline import ratios  # noqa: E402
from scripts.evallib.hub import written_settings  # noqa: E402
from scripts.evallib.load import run_for  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.server import hub_server  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

BUDGET_MS = 100.0
# the writer's embedding at the queries' priority (the baseline, first), then niced (the default)
SERVERS = {
    "RAG_BATCH_NICE=0": {"RAG_QUERY_THREADS": "1", "RAG_BATCH_NICE": "0"},
    "RAG_BATCH_NICE=10": {"RAG_QUERY_THREADS": "1", "RAG_BATCH_NICE": "10"},
}


def settings_for(data_dir: Path) -> Settings:
    """The shipped `docs` collection, no kb folder: its chunks come from the benchmark."""
    shipped = read_yaml((REPO / "collections.yaml").read_text(), REPO / "collections.yaml")
    docs = {**shipped["collections"]["docs"], "kb": None, "llm": {"provider": "extractive"}}
    return written_settings(data_dir, {"docs": docs})


def populate(settings: Settings, corpus: list[str], target: int) -> int:
    """Store `target` chunks of the corpus (once: a later run finds them)."""
    hub = Hub.open(settings)
    try:
        docs = hub.collection("docs")
        info = docs.info()
        stored = hub.store.count(info.physical) if info else 0
        if stored >= target:
            return stored
        print(f"embedding {target - stored} chunks (once; kept in {settings.data_dir})", flush=True)
        n, writes, size = 0, [], 0
        for n, text in enumerate(corpus):
            source = f"scifact/{n}"
            if hub.store.count(docs.writable().physical, Selector(sources=(source,))):
                continue
            chunks = [
                Chunk(t, source, i) for i, t in enumerate(split_text(text, docs.cfg.chunking))
            ]
            chunks = chunks[: target - stored - size]
            writes.append(
                DocumentWrite(docs, Selector(sources=(source,)), chunks, {"origin": "api"})
            )
            size += len(chunks)
            if size >= target - stored or len(writes) == 64:
                write_documents(docs, writes)
                stored, writes, size = stored + size, [], 0
                print(f"  {stored} chunks", flush=True)
            if stored >= target:
                break
        hub.store.optimize(docs.writable().physical)
        return stored
    finally:
        hub.close()


def in_process(settings: Settings, queries: list[str]) -> dict[str, list[float]]:
    """The retrieval without HTTP: embed, store search, and the whole search() call."""
    hub = Hub.open(settings)
    try:
        hub.load_models()
        docs = hub.collection("docs")
        for query in queries[:10]:  # warm-up, then questions not asked before
            search(docs, SearchRequest(query=query))
        times: dict[str, list[float]] = {"total": [], "embed": [], "search": []}
        for query in queries[10:]:
            started = time.perf_counter()
            outcome = search(docs, SearchRequest(query=query))
            times["total"].append(time.perf_counter() - started)
            for key in ("embed", "search"):
                times[key].append(outcome.timings_ms[key] / 1000)
        return times
    finally:
        hub.close()


class Questions:
    """Each caller's next question, never one asked before in this run (shared by threads)."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts
        self._next = itertools.count()  # next() on it is atomic under the GIL

    def __next__(self) -> str:
        n = next(self._next)
        if n >= len(self._texts):
            raise SystemExit(f"all {len(self._texts)} questions asked: run fewer --seconds")
        return self._texts[n]


def question_pool(data_dir: Path, corpus: list[str]) -> list[str]:
    """SciFact's claims, then the sentences of its abstracts (30 to 300 characters), each once."""
    pool = dict.fromkeys(distinct_questions(data_dir))
    for text in corpus:
        for sentence in re.split(r"(?<=[.!?])\s+", text.split("\n\n", 1)[-1]):
            if 30 <= len(sentence) <= 300:
                pool.setdefault(sentence.strip(), None)
    return list(pool)


def call_context(http: httpx.Client, query: str, record: dict[str, list[float]]) -> None:
    started = time.perf_counter()
    response = http.post("/v1/rag/context", json={"query": query})
    waited = time.perf_counter() - started
    response.raise_for_status()
    timings = response.json()["timings_ms"]
    record["total"].append(waited)
    record["embed"].append(timings["embed"] / 1000)
    record["search"].append(timings["search"] / 1000)
    record["http"].append(waited - timings["total"] / 1000)


def over_http(
    url: str,
    queries: Questions,
    callers: int,
    seconds: float,
    writer_docs: list[str] | None,
    sources: str = "live",
) -> tuple[dict[str, list[float]], list[float]]:
    """`callers` threads ask for context for `seconds`; with writer_docs, one more upserts them
    into 20 sources named `sources`/n (a name no earlier run used: nothing stored to reuse)."""
    record: dict[str, list[float]] = {"total": [], "embed": [], "search": [], "http": []}
    upserts: list[float] = []
    stop = threading.Event()
    lock = threading.Lock()

    def caller() -> None:
        mine: dict[str, list[float]] = {key: [] for key in record}
        with httpx.Client(base_url=url, timeout=30) as http:
            while not stop.is_set():
                call_context(http, next(queries), mine)
        with lock:
            for key, values in mine.items():
                record[key].extend(values)

    def writer() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            n = 0
            while not stop.is_set():
                text = writer_docs[n % len(writer_docs)]
                body = {"source": f"{sources}/{n % 20}", "text": text}
                started = time.perf_counter()
                http.post("/v1/rag/upsert/document", json=body).raise_for_status()
                upserts.append(time.perf_counter() - started)
                n += 1

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    if writer_docs:
        threads.append(threading.Thread(target=writer))
    run_for(threads, seconds, stop)
    return record, upserts


def warm_up_writes(url: str, sources: str, text: str) -> None:
    """One upsert before the clock starts: a server's first write loads what writes need (the
    sentence splitter's model, the batch session), ~5 s that would be counted as one slow upsert."""
    body = {"source": f"{sources}/warm-up", "text": text}
    httpx.post(url + "/v1/rag/upsert/document", json=body, timeout=120).raise_for_status()


def row(name: str, record: dict[str, list[float]]) -> str:
    total = latency_summary(record["total"])
    parts = [f"{name:<34}{len(record['total']):>6}{total['p50_ms']:>8.1f}{total['p95_ms']:>8.1f}"]
    for key in ("embed", "search", "http"):
        if key in record:
            s = latency_summary(record[key])
            parts.append(f"{s['p50_ms']:>10.1f}{s['p95_ms']:>6.1f}")
        else:
            parts.append(f"{'-':>10}{'-':>6}")
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--rounds", type=int, default=1, help="servers in turns, this many times (results pooled)"
    )
    parser.add_argument("--data-dir", type=Path, default=BENCH / "voice")
    args = parser.parse_args()

    dataset = load_dataset("scifact", default_data_dir())
    corpus = [d.titled for d in dataset.corpus.values()]
    pool = question_pool(default_data_dir(), corpus)
    settings = settings_for(args.data_dir)
    stored = populate(settings, corpus, args.chunks)
    baseline = in_process(settings, pool[:210])
    results: dict[str, tuple[dict, dict, dict, list[float]]] = {}
    for label, env in list(SERVERS.items()) * args.rounds:  # in turns
        queries = Questions(pool)  # a fresh server: it has seen none of them
        sources = f"live-{time.time_ns()}"  # every server writes new sources: nothing to reuse
        with hub_server(settings.config, settings.data_dir, args.port, env) as url:
            over_http(url, queries, 1, 3, None)  # warm-up
            warm_up_writes(url, sources, corpus[-1])
            idle, _ = over_http(url, queries, 1, args.seconds / 2, None)
            busy, _ = over_http(url, queries, args.callers, args.seconds / 2, None)
            writer_docs = corpus[-200:]
            loaded, upserts = over_http(
                url, queries, args.callers, args.seconds, writer_docs, sources
            )
        if label in results:  # a later round: pooled with the earlier ones
            for earlier, now in zip(results[label][:3], (idle, busy, loaded), strict=True):
                for key, values in now.items():
                    earlier[key].extend(values)
            results[label][3].extend(upserts)
        else:
            results[label] = (idle, busy, loaded, upserts)
    report(stored, args.callers, args.seconds * args.rounds, baseline, results)


def report(
    stored: int,
    callers: int,
    writer_seconds: float,  # per server, all rounds together
    baseline: dict[str, list[float]],
    results: dict[str, tuple[dict, dict, dict, list[float]]],
) -> None:
    print(f"\n{stored} chunks, embedded qdrant-edge, MiniLM 384d, hybrid, top_k 5; ms")
    print(machine_line())
    print(
        f"{'':<34}{'n':>6}{'p50':>8}{'p95':>8}{'embed p50':>10}{'p95':>6}"
        f"{'store p50':>10}{'p95':>6}{'http p50':>10}{'p95':>6}"
    )
    print(row("in-process search() (baseline)", baseline))
    base = latency_summary(baseline["total"])["p50_ms"]
    for label, (idle, busy, loaded, upserts) in results.items():
        print(f"server: {label}")
        print(row("  /context, 1 caller", idle))
        print(row(f"  /context, {callers} callers", busy))
        print(row(f"  /context, {callers} callers + upserts", loaded))
        total, up = latency_summary(loaded["total"]), latency_summary(upserts)
        print(
            f"  under load: p50 {total['p50_ms'] / base:.1f}x the in-process p50; p95 uses "
            f"{total['p95_ms'] / BUDGET_MS:.0%} of the {BUDGET_MS:.0f} ms turn budget; "
            f"{len(upserts)} upserts ({len(upserts) / writer_seconds:.2f}/s), p50 {up['p50_ms']:.0f} ms"
        )
    first, *others = results
    for label in others:
        print(f"{label} vs {first} (the baseline), same run:")
        kinds = ("1 caller", f"{callers} callers", f"{callers} callers + upserts")
        for n, name in enumerate(kinds):
            print(f"  {name}: {ratios(results[label][n]['total'], results[first][n]['total'])}")
        ups = len(results[label][3]) / max(len(results[first][3]), 1)
        print(f"  upserts/s: {ups:.2f}x")


if __name__ == "__main__":
    main()
