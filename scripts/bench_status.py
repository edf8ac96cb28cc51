"""Voice turns while an admin polls the status: `/v1/rag/context` of 2 callers, quiet, while
`GET /v1/rag/status` is asked every second, and while `GET /v1/rag/sources` is, on bench_voice's
store (the shipped `docs` collection: ~12k SciFact chunks from ~3,000 sources, written through
the API; embedded qdrant-edge, MiniLM ONNX).

Both count the chunks of each source (the engine's exact facet), and the embedded engine holds
the interpreter for the whole of a call: every request of the server waits meanwhile. The p99 of
the callers' turns shows it. With --baseline-tree (another checkout, e.g. a `git
worktree` of the code before a change) its server runs beside this one's on a copy of the store,
the two in turns, phase by phase.

    PYTHONPATH=. python scripts/bench_status.py --baseline-tree /tmp/wt-before
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.bench_voice import Questions, over_http, populate, question_pool, settings_for  # noqa: E402
from scripts.evallib import default_data_dir, load_dataset  # noqa: E402
from scripts.evallib.baseline import add_baseline_tree, hub_servers  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

POLLED = {
    "status polled": "/v1/rag/status?collection=docs",
    "sources polled": "/v1/rag/sources?collection=docs",
}


def polled(
    url: str, path: str, queries: Questions, callers: int, seconds: float, every: float
) -> tuple:
    """The callers' turns (seconds) while one more client asks for `path` every `every` seconds,
    and that client's calls' own times."""
    stop, calls = threading.Event(), []

    def poll() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            while not stop.is_set():
                started = time.perf_counter()
                http.get(path).raise_for_status()
                calls.append(time.perf_counter() - started)
                stop.wait(every)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        turns = over_http(url, queries, callers, seconds)[0]["total"]
    finally:
        stop.set()
        poller.join()
    return turns, calls


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--callers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="each phase, each round")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between status polls")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=8775)
    parser.add_argument("--data-dir", type=Path, default=BENCH / "voice")
    add_baseline_tree(parser)
    args = parser.parse_args()

    dataset = load_dataset("scifact", default_data_dir())
    corpus = [d.titled for d in dataset.corpus.values()]
    settings = settings_for(args.data_dir)
    stored = populate(settings, corpus, 10_000)
    queries = Questions(question_pool(default_data_dir(), corpus))
    turns: dict[tuple[str, str], list[float]] = {}
    calls: dict[tuple[str, str], list[float]] = {}
    with hub_servers(args.data_dir, args.port, {}, args.baseline_tree) as urls:
        for url in urls.values():
            over_http(url, queries, 1, 3)  # warm-up
            for path in POLLED.values():
                httpx.get(url + path, timeout=60).raise_for_status()
        for _ in range(args.rounds):
            for label, url in urls.items():  # in turns
                quiet = over_http(url, queries, args.callers, args.seconds)[0]["total"]
                turns.setdefault((label, "quiet"), []).extend(quiet)
                for phase, path in POLLED.items():
                    busy, times = polled(url, path, queries, args.callers, args.seconds, args.every)
                    turns.setdefault((label, phase), []).extend(busy)
                    calls.setdefault((label, path), []).extend(times)
    print(f"\n{stored} chunks, {args.callers} callers, a poll every {args.every:g} s; ms")
    print(machine_line())
    print(f"{'':<28}{'n':>6}{'p50':>8}{'p95':>8}{'p99':>8}")
    for (label, phase), values in turns.items():
        cells = "".join(f"{ms(values, q):>8.1f}" for q in (50, 95, 99))
        print(f"{label + ', ' + phase:<28}{len(values):>6}{cells}")
    for (label, path), values in calls.items():
        print(f"{label}: {path} p50 {ms(values, 50):.1f} ms, p95 {ms(values, 95):.1f} ms")
    for label in urls:
        for phase in POLLED:
            ratio = ms(turns[label, phase], 99) / ms(turns[label, "quiet"], 99)
            print(f"{label}: p99 {phase} over quiet {ratio:.2f}x")


if __name__ == "__main__":
    main()
