"""`rag-hub serve` in a child process on loopback, for the benchmarks that measure over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


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
