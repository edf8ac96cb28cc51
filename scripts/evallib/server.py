"""A hub server on loopback for the benchmarks that measure over HTTP: `rag-hub serve` of a source
tree in a child process, or the hub's app in a thread of the benchmark's own process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from rag_api.http.app import create_app
from rag_api.hub import Hub
from rag_api.settings import Settings
from scripts.evallib.paths import REPO


@contextmanager
def hub_server(
    config: Path,
    data_dir: Path,
    port: int,
    env: Mapping[str, str] | None = None,
    tree: Path = REPO,
) -> Iterator[str]:
    """Starts the server of the source tree `tree` (this checkout unless another is given) with
    `env` added, waits until /ready answers 200, yields its base URL, and stops it on the way out."""
    settings = {
        **(env or {}),
        "RAG_CONFIG": str(config.resolve()),
        "RAG_DATA_DIR": str(data_dir.resolve()),
        "RAG_LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-m", "rag_api", "serve", "--port", str(port)]
    with child_server(command, port, settings, tree) as url:
        yield url


@contextmanager
def child_server(
    command: Sequence[str], port: int, env: Mapping[str, str] | None = None, tree: Path = REPO
) -> Iterator[str]:
    """Runs `command` (a server on `port`) with `tree` as its source, until /ready answers 200."""
    process = subprocess.Popen(
        list(command),
        env={**os.environ, **(env or {}), "PYTHONPATH": str(tree)},
        cwd=tree,  # `python -m` imports from the working directory first: the tree's own code
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the server {command[-4:]} did not become ready")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def app_server(settings: Settings, hub: Hub) -> Iterator[str]:
    """The app of `hub` (create_app) on 127.0.0.1:`settings.port`, served by uvicorn in a thread
    of this process; yields its base URL once it listens, and stops it on the way out."""
    app = create_app(settings, hub=hub)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=settings.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"the app did not start on port {settings.port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_cpu(url: str) -> float:
    """The server's CPU seconds so far (its process, all threads), as its /metrics counts them."""
    text = httpx.get(url + "/metrics", timeout=30).text
    return float(re.search(r"^process_cpu_seconds_total (\S+)$", text, re.M).group(1))
