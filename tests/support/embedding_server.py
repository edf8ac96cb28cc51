"""An embedding server on loopback for the tests and scripts/bench_ingest.py: OpenAI's
/v1/embeddings and Ollama's /api/embed, served by uvicorn in a process of its own, with a
latency a request, a capacity (requests served at once; more are answered 429 with Retry-After,
or wait) and faults (503s, 429s, connections cut mid-answer, hangs, an input it refuses).

    with EmbeddingServer(latency_s=0.05, capacity=8) as server:
        server.openai_url          # base_url of an `openai` embedder block
        server.configure(faults=[{"kind": "503", "times": 2}])
        server.log()               # every request as the server saw it, on its clock

A vector is a function of its text alone (`vector`), so a test knows what each chunk must hold.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any, Self

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DIM = 64


def vector(text: str, dim: int = DIM) -> np.ndarray:
    """The server's vector of `text` (normalised float32), the same in every process."""
    row = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dim)
    return (row / np.linalg.norm(row)).astype(np.float32)


class EmbeddingServer:
    """The server in a child process; `configure` changes its knobs while it runs."""

    def __init__(self, **knobs: Any) -> None:
        self.knobs = knobs
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.openai_url = f"{self.url}/v1"
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.embedding_server", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{self.url}/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the embedding server did not start") from None
                time.sleep(0.05)
        self.configure(**self.knobs)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(2)
            except subprocess.TimeoutExpired:  # a request still hanging holds uvicorn's shutdown
                self._process.kill()
                self._process.wait(10)

    def configure(self, **knobs: Any) -> None:
        """latency_s, capacity, overflow ("429" or "wait"), retry_after_s, dim, faults: a list of
        {"kind": "503" | "429" | "cut" | "hang", "times": n, "from_inputs": n} (`from_inputs`:
        only requests of that many texts or more meet it); `refused_text`: a request holding an
        input that contains it is answered 400. The log starts again."""
        httpx.post(f"{self.url}/control", json=knobs, timeout=10).raise_for_status()

    def log(self) -> dict[str, Any]:
        """{"requests": [{"arrived", "done", "status", "inputs", "texts", "active"}...],
        "max_active": n}: times in seconds on the server's monotonic clock."""
        return httpx.get(f"{self.url}/log", timeout=10).json()


def _fault(state: _State, inputs: int) -> str | None:
    """The kind of the first fault waiting that meets a request of `inputs` texts (a fault with
    `from_inputs` meets only requests of that many or more: not a model's one-text probe)."""
    for at, fault in enumerate(state.faults):
        if inputs >= fault.get("from_inputs", 1):
            return state.faults.pop(at)["kind"]
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- the server (this file run as a module) ------------------------------------------------------


class _State:
    def __init__(self) -> None:
        self.knobs: dict[str, Any] = {}
        self.faults: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self.requests: list[dict[str, Any]] = []
        self.waiting: asyncio.Semaphore | None = None

    def set(self, knobs: dict[str, Any]) -> None:
        self.knobs = {
            "latency_s": 0.0,
            "capacity": None,
            "overflow": "429",
            "retry_after_s": None,
            "dim": DIM,
            "refused_text": None,
            "hang_s": 3600.0,
            **knobs,
        }
        self.faults = [f for f in knobs.get("faults", []) for _ in range(f.get("times", 1))]
        capacity = self.knobs["capacity"]
        self.waiting = asyncio.Semaphore(capacity) if capacity else None
        self.requests, self.max_active = [], 0


def _app(state: _State) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def control(request: Request) -> Response:
        state.set(await request.json())
        return JSONResponse({"ok": True})

    async def log(request: Request) -> Response:
        return JSONResponse({"requests": state.requests, "max_active": state.max_active})

    async def embed(request: Request) -> Response:
        arrived = time.monotonic()
        body = await request.json()
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        entry = {"arrived": arrived, "inputs": len(texts), "texts": texts, "active": state.active}
        state.requests.append(entry)
        knobs = state.knobs
        headers = {}
        if knobs["retry_after_s"] is not None:
            headers["Retry-After"] = str(knobs["retry_after_s"])
        fault = _fault(state, len(texts))
        if fault in ("503", "429"):
            return _answered(entry, JSONResponse(_error(fault), int(fault), headers))
        if fault == "hang":
            await asyncio.sleep(knobs["hang_s"])
        refused = knobs["refused_text"]
        if refused is not None and any(refused in text for text in texts):
            return _answered(entry, JSONResponse(_error("input refused"), 400))
        capacity = knobs["capacity"]
        if capacity and state.active >= capacity and knobs["overflow"] == "429":
            return _answered(entry, JSONResponse(_error("over capacity"), 429, headers))
        if state.waiting is not None:
            await state.waiting.acquire()
        state.active += 1
        state.max_active = max(state.max_active, state.active)
        try:
            await asyncio.sleep(knobs["latency_s"])
            rows = [vector(text, knobs["dim"]) for text in texts]
        finally:
            state.active -= 1
            if state.waiting is not None:
                state.waiting.release()
        if fault == "cut":
            return _answered(entry, _Cut(), "cut")
        if request.url.path == "/api/embed":
            reply = {"model": body.get("model"), "embeddings": [row.tolist() for row in rows]}
        else:
            encoded = body.get("encoding_format") == "base64"
            data = [
                {
                    "object": "embedding",
                    "index": at,
                    "embedding": base64.b64encode(row.tobytes()).decode()
                    if encoded
                    else row.tolist(),
                }
                for at, row in enumerate(rows)
            ]
            reply = {"object": "list", "data": data, "model": body.get("model"), "usage": {}}
        return _answered(entry, JSONResponse(reply))

    class _Cut(Response):
        """Headers that promise a body, then the connection closed after a part of it."""

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", b"1000")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"data": [', "more_body": True})

    routes = [
        Route("/health", health),
        Route("/control", control, methods=["POST"]),
        Route("/log", log),
        Route("/v1/embeddings", embed, methods=["POST"]),
        Route("/api/embed", embed, methods=["POST"]),
    ]
    return Starlette(routes=routes)


def _answered(entry: dict[str, Any], response: Any, status: int | str | None = None) -> Any:
    entry["done"] = time.monotonic()
    entry["status"] = status or response.status_code
    return response


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    port = parser.parse_args().port
    state = _State()
    state.set({})
    uvicorn.run(_app(state), host="127.0.0.1", port=port, log_level="error", access_log=False)


if __name__ == "__main__":
    main()
