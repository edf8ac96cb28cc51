"""Logs: one line per request and per indexing event, RAG_LOG_FORMAT=json, X-Request-ID everywhere."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from tests.conftest import (
    assert_error_shape,
    free_port,
    hash_collection,
    serve_process,
    wait_for,
    write_config,
)


def json_lines(path: Path) -> list[dict]:
    """Every line of a JSON log: each one must parse."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_serve_logs_json_lines_carrying_the_request_id(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "a.md").write_text("Starlings flock at dusk.")
    llm = {"provider": "ollama", "model": "llama3", "timeout": 5}
    config = write_config(tmp_path / "c.yaml", {"notes": hash_collection(kb_dir, llm=llm)})
    port, log_path = free_port(), tmp_path / "stderr.log"
    env = {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_PORT": str(port),
        "RAG_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",  # nobody: answers fall back
        "RAG_LOG_FORMAT": "json",
    }
    with log_path.open("w") as stderr:
        server = serve_process(env, "--watch", stderr=stderr)
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        wait_for(lambda: _indexed(http), timeout=120)
        traced = http.post(
            "/query/notes", json={"query": "starlings"}, headers={"X-Request-ID": "trace-123"}
        )
        assert traced.status_code == 200 and traced.headers["x-request-id"] == "trace-123"
        assert traced.json()["generator"] == "extractive"
        generated = http.get("/health").headers["x-request-id"]
        assert len(generated) == 32
        odd = http.get("/health", headers={"X-Request-ID": "two words\tand a tab"})
        assert odd.headers["x-request-id"] != "two words\tand a tab"  # not echoed into logs
        missing = http.post("/query/nope", json={"query": "x"}, headers={"X-Request-ID": "e-1"})
        error = assert_error_shape(missing, 404, "COLLECTION_NOT_FOUND")
        assert error["request_id"] == "e-1" and missing.headers["x-request-id"] == "e-1"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)

    lines = json_lines(log_path)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    access = [line for line in lines if line["logger"] == "rag_api.access"]
    query = next(line for line in access if line.get("request_id") == "trace-123")
    assert query["method"] == "POST" and query["route"] == "/query/{collection}"
    assert query["status"] == 200 and query["collection"] == "notes"
    assert isinstance(query["latency_ms"], float)
    assert any(line.get("request_id") == generated for line in access)
    assert [line["status"] for line in access if line.get("request_id") == "e-1"] == [404]
    # the request's other lines carry its id too: the LLM fallback warning, logged in a thread
    fallback = [line for line in lines if "answering extractively" in line["message"]]
    assert [line.get("request_id") for line in fallback] == ["trace-123"]
    indexed = next(line for line in lines if line.get("event") == "indexed")
    assert indexed["collection"] == "notes" and indexed["file"] == "a.md"
    assert indexed["chunks"] == 1 and "request_id" not in indexed
    assert not [line for line in lines if line["logger"] == "uvicorn.access"]  # one access log


def _indexed(http: httpx.Client) -> bool:
    try:
        status = http.get("/v1/indexer/status").json()
    except httpx.TransportError:
        return False
    return status["collections"].get("notes", {}).get("files") == 1


@pytest.mark.slow
def test_a_line_break_sent_by_a_client_cannot_forge_a_text_log_line(tmp_path: Path) -> None:
    """A client's %0A in a path (the access line) or a line break in a collection name (a route's
    own log line) is written escaped: each record stays one line of the text log."""
    config = write_config(tmp_path / "c.yaml", {"notes": hash_collection()})
    port, log_path = free_port(), tmp_path / "stderr.log"
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data"), "RAG_PORT": str(port)}
    forged = "2026-01-01 00:00:00,000 ERROR rag_api.http.auth: admin key accepted"
    with log_path.open("w") as stderr:
        server = serve_process({**env, "RAG_LOG_FORMAT": "text"}, stderr=stderr)
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        wait_for(lambda: _answers(http), timeout=120)
        path = "/nope%0A" + forged.replace(" ", "%20")
        assert_error_shape(http.get(path, headers={"X-Request-ID": "fz-1"}), 404, "NOT_FOUND")
        body = {"collection": "x\r\n" + forged}
        refused = http.post("/v1/ops/check", json=body, headers={"X-Request-ID": "fz-2"})
        assert refused.json()["exit_code"] == 2, refused.text  # could not run: logged as such
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)

    lines = log_path.read_text().splitlines()
    assert not [line for line in lines if line.startswith(forged[:10])], lines
    for rid in ("fz-1", "fz-2"):  # the client's text stays inside its request's line, escaped
        mine = [line for line in lines if line.endswith(f"[request_id={rid}]")]
        assert any("\\n" + forged in line for line in mine), lines


def _answers(http: httpx.Client) -> bool:
    try:
        return http.get("/health").status_code == 200
    except httpx.TransportError:
        return False
