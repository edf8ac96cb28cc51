"""The hub's HTTP/JSON share of a read, against its floor and (optionally) another checkout, same run.

HTTP/JSON = what the caller waits for beyond the route's own work: the round trip minus the
answer's `timings_ms.total` (target <= 1 ms for a top_k 10 answer). Measured, query by query in
turns so every server sees the same machine, over loopback with the standard library's client on a
kept-alive connection:
  hub       : `rag-hub serve` of this checkout: POST /query/bench (generate=false, top_k 10),
              /v1/rag/context and /v1/rag/search (top_k 10) on a collection of SciFact chunks;
  baseline  : the same server of another checkout (--baseline-tree, e.g. a `git worktree` of main)
              on a copy of the same store: the before/after of a change in one run;
  floor     : a bare uvicorn app (scripts/evallib/bare_server.py: same server, loop and parser, no
              framework) answering the same number of bytes after one hop to a worker thread, with
              no work there, and with as long as a search of CPU work there (the event loop idles
              meanwhile, as the hub's does; that alone raises the floor on this machine).
Every request asks a question no server was asked before (the hub keeps recent query vectors: a
repeated question would skip its embedding). /v1/rag/search answers carry no timings: its round
trip is compared as is. Run it at normal priority on a machine otherwise quiet, and say the load.

    python scripts/bench_http.py --queries 200 --baseline-tree /tmp/main-checkout
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from http.client import HTTPConnection
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import load_config  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from scripts.bench_query import TOP_K, build  # noqa: E402
from scripts.evallib import add_data_dir, fresh_questions, latency_summary  # noqa: E402
from scripts.evallib.bare_server import floor_server  # noqa: E402
from scripts.evallib.baseline import add_baseline_tree, change, hub_servers  # noqa: E402
from scripts.evallib.client import connect, timed_post  # noqa: E402
from scripts.evallib.hub import MINILM, written_settings  # noqa: E402
from scripts.evallib.paths import MODEL_CACHE  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

ROUTES = {  # name: (path, body for a question)
    "query": ("/query/bench", lambda q: {"query": q, "generate": False, "top_k": TOP_K}),
    "context": ("/v1/rag/context", lambda q: {"query": q, "top_k": TOP_K, "collection": "bench"}),
    "search": ("/v1/rag/search", lambda q: {"query": q, "top_k": TOP_K, "collection": "bench"}),
}
WARM_UP = 10  # requests per route and server, not measured


def post(client: HTTPConnection, path: str, body: dict) -> tuple[float, float, int]:
    """(round trip s, the route's own total s, answer bytes) of one request."""
    elapsed, answer = timed_post(client, path, body)
    total = json.loads(answer).get("timings_ms", {}).get("total", 0.0) / 1000
    return elapsed, total, len(answer)


def settings_for(root: Path) -> Settings:
    entry = {
        "embedder": {**MINILM, "runtime": "onnx"},
        "retrieval": {"top_k": TOP_K, "threshold": -1},
    }
    # the ONNX export is kept beside the other bench caches: built once, not every run
    cache = Path(os.environ.get("RAG_MODEL_CACHE", MODEL_CACHE))
    return written_settings(root, {"bench": entry}, model_cache=cache)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200, help="measured requests per route")
    parser.add_argument("--port", type=int, default=8770)
    add_data_dir(parser)
    add_baseline_tree(parser)
    args = parser.parse_args()

    questions = fresh_questions(args.data_dir, ROUTES, WARM_UP, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        settings, env = built(Path(tmp) / "hub", args.chunks, args.data_dir)
        with ExitStack() as stack:
            servers = hub_servers(Path(tmp) / "hub", args.port, env, args.baseline_tree)
            clients = {name: connect(url) for name, url in stack.enter_context(servers).items()}
            probe = next(iter(clients.values()))
            sizes = {
                route: post(probe, path, body("sizing the answers"))[2]
                for route, (path, body) in ROUTES.items()
            }
            # floors sized like the query answer, with no work and with a search's worth of work
            work_ms = 5.0
            for n, (name, work) in enumerate((("floor", 0.0), ("floor+work", work_ms))):
                url = stack.enter_context(floor_server(args.port + 2 + n, sizes["query"], work))
                clients[name] = connect(url)
            times = measure(clients, questions)
    report(times, sizes, args)


def built(root: Path, chunks: int, data_dir: Path) -> tuple[Settings, dict[str, str]]:
    """A hub folder under `root` holding `chunks` SciFact chunks, and the environment its server
    needs (the ONNX export is kept with the bench caches)."""
    settings = settings_for(root)
    hub = Hub.open(settings, load_config(settings.config))
    build(hub, chunks, data_dir)
    hub.close()
    return settings, {"RAG_MODEL_CACHE": str(settings.model_cache)}


def measure(clients: dict[str, HTTPConnection], questions: dict[str, tuple[list, list]]):
    """{(server, route): [(round trip, HTTP/JSON)]}, requests in turns across the servers."""
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for route, (path, body) in ROUTES.items():
        warm, measured = questions[route]
        for n, question in enumerate(warm + measured):
            for name, client in clients.items():
                if name.startswith("floor") and route != "query":
                    continue  # one floor: sized like the query answer
                elapsed, total, _ = post(client, path, body(question))
                if n >= WARM_UP:
                    times.setdefault((name, route), []).append((elapsed, elapsed - total))
    return times


def report(times, sizes, args) -> None:
    print(
        f"{args.chunks} chunks, top_k {TOP_K}, {args.queries} new questions per route and server, "
        f"in turns; answers {sizes['query']} / {sizes['context']} / {sizes['search']} bytes "
        "(query / context / search)"
    )
    print(machine_line())
    print(f"  {'server':<11}{'route':<9}{'HTTP/JSON p50':>14}{'p95':>8}{'round trip p50':>16}")
    p50 = {}
    for (name, route), samples in times.items():
        share = latency_summary([s[1] for s in samples])
        trip = latency_summary([s[0] for s in samples])
        p50[name, route] = (share["p50_ms"], trip["p50_ms"])
        print(
            f"  {name:<11}{route:<9}{share['p50_ms']:>11.2f} ms{share['p95_ms']:>8.2f}"
            f"{trip['p50_ms']:>13.2f} ms"
        )
    for route in ROUTES:
        if ("baseline", route) in p50:
            (hub, hub_trip), (base, base_trip) = p50["hub", route], p50["baseline", route]
            which = "round trip" if route == "search" else "HTTP/JSON"
            now, before = (hub_trip, base_trip) if route == "search" else (hub, base)
            print(f"  {route}: {which} hub/baseline {change(before, now)}")
    if ("floor+work", "query") in p50:
        floor, trip = p50["floor+work", "query"]
        print(
            f"  query: HTTP/JSON above the floor with work ({trip - floor:.1f} ms of it in the "
            f"worker): {p50['hub', 'query'][0] - floor:.2f} ms"
        )


if __name__ == "__main__":
    main()
