"""Shared fixtures: fresh settings and tmp data dirs per test, both Qdrant engines, live servers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from prometheus_client import REGISTRY

from rag_api.config import read_yaml, yaml_text
from rag_api.http.app import create_app
from rag_api.hub import Hub
from rag_api.settings import Settings

pytest_plugins = ["tests.support.fakes.fixtures"]

REPO = Path(__file__).resolve().parents[1]
LOCAL_ENGINES = ["edge", "memory"]  # the two that always run here
ENGINES = [*LOCAL_ENGINES, pytest.param("server", marks=pytest.mark.qdrant_server)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# one ONNX export of each bundled model for the whole run (and the CLI subprocesses), not one per
# test's data dir; keyed by the model's files, so sharing it between runs is safe
os.environ.setdefault("RAG_MODEL_CACHE", str(Path(tempfile.gettempdir()) / "rag-hub-test-models"))
# every test talks plain HTTP on loopback: an HTTP client (httpx, the openai SDK, `httpx.get`)
# need not parse a CA bundle it never uses (16-22 ms a client, over a thousand clients a run); a
# certificate folder is read only when a TLS peer is met, and this one is empty
_NO_CA = Path(tempfile.gettempdir()) / "rag-hub-test-no-ca"
_NO_CA.mkdir(exist_ok=True)
os.environ.pop("SSL_CERT_FILE", None)
os.environ["SSL_CERT_DIR"] = str(_NO_CA)


def hash_collection(kb: Path | None = None, dim: int = 64, **overrides: Any) -> dict[str, Any]:
    """A collection entry using the deterministic test embedder and the extractive generator."""
    entry: dict[str, Any] = {
        "language": "en",
        "embedder": {"provider": "hash", "model": "hash-test", "dim": dim},
        "chunking": {"size": 200, "overlap": 20},
        "retrieval": {"top_k": 5, "threshold": 0.0, "mode": "hybrid"},
        "llm": {"provider": "extractive"},
    }
    if kb is not None:
        entry["kb"] = str(kb)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(entry.get(key), dict):
            entry[key] = {**entry[key], **value}
        else:
            entry[key] = value
    return entry


def minilm_collection(kb: Path | None = None, **overrides: Any) -> dict[str, Any]:
    """A collection entry on the bundled all-MiniLM-L6-v2 model."""
    embedder = {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2", "dim": 384}
    overrides = {"chunking": {"size": 512, "overlap": 64}, **overrides}
    return hash_collection(kb, embedder=embedder, **overrides)


def repo_yaml(relative: str) -> Any:
    """A YAML file of the repository, read as the hub reads collections.yaml."""
    path = REPO / relative
    return read_yaml(path.read_text(encoding="utf-8"), path)


def write_config(path: Path, collections: dict[str, dict[str, Any]], **top: Any) -> Path:
    """Write a collections.yaml; the first collection is the default unless told otherwise."""
    document = {"default_collection": next(iter(collections)), **top, "collections": collections}
    path.write_text(yaml_text(document), encoding="utf-8")
    return path


def _no_qdrant_server() -> str | None:
    """Why no real Qdrant server can be had (None when RAG_TEST_QDRANT_URL or Docker gives one)."""
    if os.environ.get("RAG_TEST_QDRANT_URL"):
        return None
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:
        return f"RAG_TEST_QDRANT_URL is unset and no Docker engine answers ({type(exc).__name__})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a Qdrant server, deselect the qdrant_server tests and say why once."""
    server_tests = [item for item in items if item.get_closest_marker("qdrant_server")]
    reason = _no_qdrant_server() if server_tests else None
    if reason:
        items[:] = [item for item in items if item not in server_tests]
        config.hook.pytest_deselected(items=server_tests)
        config.stash[_SERVER_NOTE] = f"{len(server_tests)} qdrant_server tests deselected: {reason}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    note = config.stash.get(_SERVER_NOTE, None)
    if note:
        terminalreporter.write_line(note)


_SERVER_NOTE = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def qdrant_server_url() -> Iterator[str]:
    """A real Qdrant server: RAG_TEST_QDRANT_URL, else the qdrant/qdrant image via testcontainers."""
    url = os.environ.get("RAG_TEST_QDRANT_URL")
    if url:
        yield url
        return
    from testcontainers.qdrant import QdrantContainer

    with QdrantContainer() as container:
        yield f"http://{container.rest_host_address}"


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Store-level tests run on the embedded engine, on qdrant-client's in-memory mode (the server
    code path) and, with the qdrant_server marker, on a real server."""
    if request.param == "server":
        _empty_server(request.getfixturevalue("qdrant_server_url"))
    return request.param


def _empty_server(url: str) -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(url=url)
    for collection in client.get_collections().collections:
        client.delete_collection(collection.name)


@pytest.fixture
def make_settings(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[..., Settings]:
    """Settings on a tmp data dir for an engine: 'edge' (embedded), 'memory' (qdrant-client
    :memory:) or 'server' (the qdrant_server_url fixture)."""

    def make(config: Path, engine: str = "edge", **overrides: Any) -> Settings:
        urls = {"edge": None, "memory": ":memory:"}
        values: dict[str, Any] = {
            "config": config,
            "data_dir": tmp_path / "data",
            "qdrant_url": urls[engine]
            if engine in urls
            else request.getfixturevalue("qdrant_server_url"),
            "ollama_url": "http://127.0.0.1:9",  # nothing listens: no test reaches a real Ollama
        }
        return Settings(**{**values, **overrides})

    return make


@pytest.fixture
def open_hub() -> Iterator[Callable[[Settings], Hub]]:
    """Open hubs that are closed at the end of the test."""
    hubs: list[Hub] = []

    def opener(settings: Settings) -> Hub:
        hub = Hub.open(settings)
        hubs.append(hub)
        return hub

    yield opener
    for hub in hubs:
        hub.close()


@pytest.fixture
def open_docs(tmp_path: Path, make_settings, open_hub, engine: str) -> Callable[[str], Hub]:
    """Hubs of one hash collection `docs` (no kb folder) on the engine, each of its own `name`."""

    def opened(name: str) -> Hub:
        config = write_config(tmp_path / f"{name}.yaml", {"docs": hash_collection()})
        return open_hub(make_settings(config, engine, data_dir=tmp_path / name))

    return opened


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """The real app under uvicorn on a loopback port, in a thread."""

    def __init__(
        self,
        settings: Settings,
        hub: Hub | None = None,
        port: int | None = None,
        **app_options: Any,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings.host, settings.port = "127.0.0.1", self.port  # what the server records
        self.app = create_app(settings, hub=hub, **app_options)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.exit_code: int | None = None

    def _run(self) -> None:
        try:
            self._server.run()
        except SystemExit as exc:  # uvicorn exits when the lifespan fails to start
            self.exit_code = int(exc.code or 0)
        else:
            if not self._server.started:  # uvicorn < 0.50 returns; uvicorn.run exits 3 then
                self.exit_code = 3

    @property
    def hub(self) -> Hub:
        return self.app.state.hub

    def start(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the app did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """Start live servers (stopped at the end of the test): serve(settings) -> LiveServer;
    keyword options go to create_app (e.g. watch=True)."""
    servers: list[LiveServer] = []

    def start(
        settings: Settings, hub: Hub | None = None, port: int | None = None, **app_options: Any
    ) -> LiveServer:
        server = LiveServer(settings, hub, port, **app_options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> dict[str, str]:
    """A kb folder (one line of it broken) and the environment of a `rag-hub` command on it."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("## Refunds\n\nRefunds are possible within 30 days of purchase.\n")
    (kb / "policy.md").write_text("## Vacation\n\nEmployees get 25 days of vacation per year.\n")
    (kb / "broken.jsonl").write_text('{"text": "fine"}\nnot json\n')
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    return {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`rag-hub ARGS` as a subprocess of this checkout's code."""
    return subprocess.run(
        [sys.executable, "-m", "rag_api", *args],
        stdin=subprocess.DEVNULL,  # never a terminal: a command that would prompt must refuse
        capture_output=True,
        text=True,
        env=cli_env(env),
        cwd=cwd or REPO,
        timeout=timeout,
    )


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a `python -m rag_api` subprocess running this checkout's code."""
    return {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}


def serve_process(
    env: dict[str, str],
    *args: str,
    stdout: Any = subprocess.DEVNULL,
    stderr: Any = subprocess.DEVNULL,
) -> subprocess.Popen:
    """`rag-hub serve` of this checkout in a child process with `env` (RAG_*), `args` after it."""
    return subprocess.Popen(
        [sys.executable, "-m", "rag_api", "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=cli_env(env),
        cwd=REPO,
    )


def assert_error_shape(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Every error: the status, and {"error": {"code", "message"}} with a readable message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] == code, body
    assert isinstance(error["message"], str) and len(error["message"]) > 5, body
    return error


def texts_embedded(provider: str, kind: str) -> float:
    """Texts this process's embedders of `provider` embedded as `kind` (rag_embeddings_total):
    `document` (chunks written), `passage` (the extractive scorer's sentences) or `query`."""
    labels = {"provider": provider, "kind": kind}
    return REGISTRY.get_sample_value("rag_embeddings_total", labels) or 0.0


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll until predicate() is truthy; fail with a clear message after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@pytest.fixture(scope="module", params=ENGINES)
def labelled(request, tmp_path_factory):
    """A served hub with a chunk of every label (tests.support.labels), on each engine."""
    from tests.support.labels import engine_url, labelled_world

    with labelled_world(tmp_path_factory.mktemp("labels"), engine_url(request)) as built:
        yield built


@pytest.fixture
def spawn() -> Iterator[Callable[..., Any]]:
    """spawn(*args, env=..., prefix=...) -> CliProcess; whatever still runs is killed at the end."""
    from tests.support.cli_process import CliProcess

    started: list[CliProcess] = []

    def start(*args: str, env: dict[str, str], prefix: Sequence[str] = ()) -> CliProcess:
        started.append(CliProcess(*args, env=env, prefix=prefix))
        return started[-1]

    yield start
    for cli in started:
        cli.stop(signal.SIGKILL)
