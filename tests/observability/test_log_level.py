"""RAG_LOG_LEVEL sets the hub's own loggers (rag_api.*), not only uvicorn's; the renamed
RAG_TORCH_THREADS is still read, with one deprecation line."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import httpx
import pytest

from rag_api.observability.logs import apply_log_level
from rag_api.settings import Settings
from tests.conftest import (
    free_port,
    hash_collection,
    run_cli,
    serve_process,
    wait_for,
    write_config,
)


def _serve_log(tmp_path: Path, level: str) -> str:
    """The text log of `rag-hub serve` at RAG_LOG_LEVEL=level, from start to one request."""
    config = write_config(tmp_path / f"{level}.yaml", {"notes": hash_collection()})
    port, log_path = free_port(), tmp_path / f"{level}.log"
    env = {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / level),
        "RAG_PORT": str(port),
        "RAG_LOG_LEVEL": level,
        "RAG_LOG_FORMAT": "text",
    }
    with log_path.open("w") as stderr:
        server = serve_process(env, stderr=stderr)
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        wait_for(lambda: _status(http) == 200, timeout=120)
        assert http.get("/collections/nope").status_code == 404
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    return log_path.read_text()


def _status(http: httpx.Client) -> int | None:
    try:
        return http.get("/health").status_code
    except httpx.TransportError:
        return None


@pytest.mark.slow
def test_warning_quiets_the_hub_s_info_lines_that_info_shows(tmp_path: Path) -> None:
    shown = _serve_log(tmp_path, "info")
    assert " INFO rag_api.http.app: serving 1 collections" in shown, shown
    assert " INFO rag_api." in shown.split("serving 1 collections", 1)[1], shown  # the request
    quiet = _serve_log(tmp_path, "WARNING")  # any case
    assert " INFO " not in quiet, quiet


@pytest.mark.parametrize(
    ("level", "verbose", "hub", "others"),
    [
        ("debug", None, logging.DEBUG, logging.INFO),
        ("warning", None, logging.WARNING, logging.WARNING),
        ("error", None, logging.ERROR, logging.ERROR),
        ("warning", logging.DEBUG, logging.DEBUG, logging.DEBUG),  # rag-hub -vv serve
    ],
)
def test_the_level_of_the_hub_s_loggers_and_the_others(level, verbose, hub, others) -> None:
    root, saved = logging.getLogger(), logging.getLogger().level
    try:
        root.setLevel(verbose or logging.WARNING)
        apply_log_level(Settings(log_level=level).log_level)
        for name in ("rag_api.http.app", "rag_api.store.edge", "rag_api.watcher"):
            assert logging.getLogger(name).getEffectiveLevel() == hub
        assert logging.getLogger("httpx").getEffectiveLevel() == others
        # the MCP SDK's line per request: warnings only, unless -v/-vv asks for more
        quiet = others if verbose else max(others, logging.WARNING)
        assert logging.getLogger("mcp").getEffectiveLevel() == quiet
    finally:
        root.setLevel(saved)
        for name in ("rag_api", "mcp"):
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_rag_torch_threads_is_read_as_rag_batch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TORCH_THREADS", "3")
    assert Settings().batch_threads == 3
    monkeypatch.setenv("RAG_BATCH_THREADS", "2")
    assert Settings().batch_threads == 2  # the new name wins


@pytest.mark.slow
def test_the_old_name_costs_one_deprecation_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", {"notes": hash_collection()})
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "d")}
    result = run_cli("collections", env={**env, "RAG_TORCH_THREADS": "2"})
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "RAG_TORCH_THREADS" in line]
    assert lines == ["RAG_TORCH_THREADS is deprecated (still read): set RAG_BATCH_THREADS instead"]
    assert "RAG_TORCH_THREADS" not in run_cli("collections", env=env).stderr
