"""`search` through MCP against `POST /v1/rag/search` (the standard library's client on a kept-alive
connection) for the same kind of question. MCP twice: with the SDK's own client (ClientSession over
Streamable HTTP, one session: what the client library costs is in its figure) and as plain
JSON-RPC posts on a kept-alive connection (the server's share alone). In turns, alternating request by request on one `rag-hub serve` of SciFact chunks (ONNX
MiniLM, hybrid, top_k 10). Every request asks a question new to the server (the hub keeps recent
query vectors): MCP the even questions of SciFact's list, the route the odd ones. Run it
alone on a quiet machine; the target is MCP's round trip p50 <= 1.2x the route's.

    PYTHONPATH=. python scripts/bench_mcp.py --queries 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from scripts.bench_http import built  # noqa: E402
from scripts.bench_query import TOP_K  # noqa: E402
from scripts.evallib import add_data_dir, distinct_questions, latency_summary  # noqa: E402
from scripts.evallib.client import connect, timed_post  # noqa: E402
from scripts.evallib.server import hub_server  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

WARM_UP = 10
JSON_RPC = {"Accept": "application/json, text/event-stream"}
VERSION = "mcp-protocol-version"


def arguments(question: str) -> dict[str, object]:
    return {"query": question, "collection": "bench", "top_k": TOP_K}


async def measure(url: str, questions: list[str]) -> dict[str, list[float]]:
    """Round trips in seconds, the three in turns, each on a question of its own."""
    rest, plain = connect(url), connect(url)
    times: dict[str, list[float]] = {"mcp sdk": [], "mcp post": [], "route": []}
    async with httpx2.AsyncClient(timeout=60) as http:
        async with streamable_http_client(url + "/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as mcp:
                agreed = await mcp.initialize()
                headers = {**JSON_RPC, VERSION: agreed.protocol_version}
                for n, (sdk, post, route) in enumerate(
                    zip(questions[::3], questions[1::3], questions[2::3], strict=True)
                ):
                    started = time.perf_counter()
                    result = await mcp.call_tool("search", arguments(sdk))
                    took = {"mcp sdk": time.perf_counter() - started}
                    assert not result.is_error, result.content
                    call = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                            "params": {"name": "search", "arguments": arguments(post)}}  # fmt: skip
                    took["mcp post"] = timed_post(plain, "/mcp", call, headers)[0]
                    body = {"query": route, "collection": "bench", "top_k": TOP_K}
                    took["route"] = timed_post(rest, "/v1/rag/search", body)[0]
                    if n >= WARM_UP:
                        for name, seconds in took.items():
                            times[name].append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--port", type=int, default=8790)
    add_data_dir(parser)
    args = parser.parse_args()
    questions = distinct_questions(args.data_dir)[: 3 * (WARM_UP + args.queries)]
    if len(questions) < 3 * (WARM_UP + args.queries):
        parser.error(f"--queries at most {len(questions) // 3 - WARM_UP}")
    with tempfile.TemporaryDirectory() as tmp:
        settings, env = built(Path(tmp) / "hub", args.chunks, args.data_dir)
        with hub_server(settings.config, settings.data_dir, args.port, env) as url:
            times = asyncio.run(measure(url, questions))
    print(f"{args.chunks} chunks, top_k {TOP_K}, {args.queries} questions, alternating")
    print(machine_line())
    p50 = {}
    for name, samples in times.items():
        summary = latency_summary(samples)
        p50[name] = summary["p50_ms"]
        print(f"  {name:<9} round trip p50 {summary['p50_ms']:.2f} ms, p95 {summary['p95_ms']:.2f}")
    ratios = {
        f"{name}/route": round(p50[name] / p50["route"], 3) for name in ("mcp sdk", "mcp post")
    }
    print(json.dumps(ratios))


if __name__ == "__main__":
    main()
