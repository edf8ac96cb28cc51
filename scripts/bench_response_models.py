"""What declaring response models costs a request, against the plain dicts they replaced, same run.

A real hub (the hash embedder, a small kb) answers each main route once; the answers are then
served again and again by two bare FastAPI apps through their ASGI interface in-process: one route
per answer declared like the hub's routes now are (response_model, exclude_unset), and its twin
declared as before (`-> dict[str, Any]`). The requests alternate route by route, so both see the
same machine; the difference of the medians is what the model costs a request.

    PYTHONPATH=. python scripts/bench_response_models.py --requests 3000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from rag_api.answering.models import QueryAnswer
from rag_api.catalog import CollectionList
from rag_api.kbadmin.models import ContextBlock, SearchResults
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import REFUND, start_indexed, write_kb

ROUTES = {  # path -> (model, body); answers captured from the real hub
    "/query/docs": (QueryAnswer, {"query": REFUND}),
    "/v1/rag/search": (SearchResults, {"query": REFUND}),
    "/v1/rag/context": (ContextBlock, {"query": REFUND}),
    "/collections": (CollectionList, None),
}


def capture(root: Path) -> dict[str, Any]:
    """One real answer per route, from a hub serving a small indexed kb."""
    config = write_config(root / "c.yaml", {"docs": hash_collection(write_kb(root / "kb"))})
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, live = start_indexed(settings, "docs")
    try:
        answers = {}
        for path, (_, body) in ROUTES.items():
            method = "POST" if body is not None else "GET"
            answers[path] = httpx.request(method, live.url + path, json=body).json()
        return answers
    finally:
        live.stop()
        hub.close()


def twin_apps(answers: dict[str, Any]) -> tuple[FastAPI, FastAPI]:
    """Apps answering the captured dicts: with the declared models, and as plain dicts."""
    typed, plain = FastAPI(), FastAPI()
    for path, answer in answers.items():

        def endpoint(answer: dict[str, Any] = answer) -> dict[str, Any]:
            return answer

        model = ROUTES[path][0]
        typed.add_api_route(path, endpoint, response_model=model, response_model_exclude_unset=True)
        plain.add_api_route(path, endpoint)
    return typed, plain


async def run(typed: FastAPI, plain: FastAPI, requests: int) -> dict[str, dict[str, list[float]]]:
    clients = {
        name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        for name, app in (("typed", typed), ("plain", plain))
    }
    times: dict[str, dict[str, list[float]]] = {p: {"typed": [], "plain": []} for p in ROUTES}
    for n in range(requests):
        for path in ROUTES:
            order = ("typed", "plain") if n % 2 else ("plain", "typed")
            for name in order:
                started = time.perf_counter()
                response = await clients[name].get(path)
                times[path][name].append(time.perf_counter() - started)
                assert response.status_code == 200
    for client in clients.values():
        await client.aclose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="per route and app")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        answers = capture(Path(tmp))
    typed, plain = twin_apps(answers)
    for path, answer in answers.items():  # the twins answer the same bytes
        assert ROUTES[path][0].model_validate(answer).model_dump(exclude_unset=True) == answer
    times = asyncio.run(run(typed, plain, args.requests))
    print(f"{'route':<18} {'dicts p50':>10} {'models p50':>11} {'cost/request':>13} {'ratio':>6}")
    for path, sides in times.items():
        plain_ms = statistics.median(sides["plain"]) * 1000
        typed_ms = statistics.median(sides["typed"]) * 1000
        cost_us = (typed_ms - plain_ms) * 1000
        print(
            f"{path:<18} {plain_ms:>8.3f}ms {typed_ms:>9.3f}ms {cost_us:>10.1f} µs "
            f"{typed_ms / plain_ms:>6.3f}"
        )


if __name__ == "__main__":
    main()
