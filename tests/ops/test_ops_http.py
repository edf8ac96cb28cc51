"""The embedded store belongs to the running server: check and migrate run inside it, while it
keeps answering queries, and the CLI prints the same output and exit statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import anyio
import httpx
import pytest

from rag_api.errors import MigrationInProgress
from rag_api.http.endpoints import ops
from rag_api.ops.migrate.run import MigrateBody
from tests.conftest import (
    REPO,
    assert_error_shape,
    hash_collection,
    run_cli,
    wait_for,
    write_config,
)
from tests.support.migration_world import QUESTIONS, SlowUpstream, fill, write_api

KEY = "admin-secret"


class QueryLoop(threading.Thread):
    """Asks the server one question after another, noting each status and the live collection."""

    def __init__(self, url: str, key: str) -> None:
        super().__init__(daemon=True)
        headers = {"Authorization": f"Bearer {key}"}  # reads are guarded once a key is set
        self.client = httpx.Client(base_url=url, headers=headers, timeout=30)
        self.statuses: list[int] = []
        self.physicals: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            body = {"query": QUESTIONS[n % len(QUESTIONS)], "generate": False}
            response = self.client.post("/query/docs", json=body)
            self.statuses.append(response.status_code)
            if response.status_code == 200 and not response.json()["sources"]:
                self.statuses.append(-1)  # an empty answer counts as a failure
            self.physicals.append(
                self.client.get("/collections").json()["collections"][0]["physical"]
            )
            n += 1


def answers(client: httpx.Client) -> list[list[tuple[str, int]]]:
    rows = []
    for question in QUESTIONS:
        response = client.post(
            "/query/docs", json={"query": question, "generate": False, "mode": "dense"}
        )
        rows.append(sorted((s["source"], s["chunk_index"]) for s in response.json()["sources"]))
    return rows


@pytest.mark.slow
def test_migration_inside_the_serving_process(tmp_path, make_settings, serve) -> None:
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, dim=768)})
    config.write_text("# operator's notes stay\n" + config.read_text())
    server = serve(make_settings(config, "edge", admin_api_key=KEY))
    collection = server.hub.collection("docs")
    fill(collection, kb)
    env = {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_HOST": "127.0.0.1",
        "RAG_PORT": str(server.port),
        "RAG_ADMIN_API_KEY": KEY,
        "RAG_QDRANT_URL": "",
    }
    admin = server.client(headers={"Authorization": f"Bearer {KEY}"})
    assert_error_shape(server.client().post("/v1/ops/check", json={}), 401, "UNAUTHORIZED")

    with SlowUpstream(dim=32, open_for=2) as upstream:
        loop = QueryLoop(server.url, KEY)
        loop.start()
        migrate = subprocess.Popen(
            [sys.executable, "-m", "rag_api", "migrate", "docs", "--provider", "openai",
             "--model", "fake-embed", "--dim", "32", "--base-url", f"{upstream.url}/v1", "--yes"],
            env={**os.environ, "PYTHONPATH": str(REPO), **env},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: len(upstream.calls("/v1/embeddings")) > 2, timeout=60)
            # mid-copy: a write through the server's write path, and a second migration
            write_api(collection, range(300, 302), 2, tag=" written mid-migration")
            body = {"collection": "docs", "embedder": upstream.embedder()}
            assert_error_shape(
                admin.post("/v1/ops/migrate", json=body), 409, "MIGRATION_IN_PROGRESS"
            )
            before = answers(admin)  # what the old collection answers, the write included
            wait_for(lambda: len(loop.statuses) > 20)
            assert server.hub.store.alias_target("docs") == "docs__v1"
        finally:
            upstream.gate.set()
            out, err = migrate.communicate(timeout=120)
        assert migrate.returncode == 0, out + err
        wait_for(lambda: loop.physicals[-1:] == ["docs__v2"])
        loop.stop.set()
        loop.join(timeout=30)
        check = run_cli("-v", "check", "--json", env=env)  # the store is locked: the server runs it

    assert "docs__v1 -> docs__v2" in out and "embedder updated" in out
    assert "running inside the rag-hub server" in err
    assert set(loop.statuses) == {200}, loop.statuses  # every query answered, none empty
    swap = loop.physicals.index("docs__v2")
    assert set(loop.physicals[:swap]) == {"docs__v1"} and set(loop.physicals[swap:]) == {"docs__v2"}
    assert collection.cfg.embedder.id == "openai:fake-embed"
    assert server.hub.store.sources("docs__v2")["api/record-301"] == 2
    text = config.read_text()
    assert text.startswith("# operator's notes stay\n") and "fake-embed" in text

    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["collections"][0]["physical"] == "docs__v2"
    owned = [line for line in check.stderr.splitlines() if "owned by the rag-hub server" in line]
    assert len(owned) == 1 and " INFO rag_api.ops: the store is owned" in owned[0], owned

    rollback = run_cli("migrate", "docs", "--rollback", "--yes", env=env)  # server-side again
    assert rollback.returncode == 0, rollback.stdout + rollback.stderr
    assert server.hub.store.alias_target("docs") == "docs__v1"
    assert answers(admin) == before
    assert "provider: hash" in config.read_text()


@pytest.mark.slow
def test_check_through_the_server_reports_problems(tmp_path, make_settings, serve) -> None:
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    server = serve(make_settings(config, "edge"))
    fill(server.hub.collection("docs"), kb)
    sorted(kb.iterdir())[0].unlink()
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data"),
           "RAG_PORT": str(server.port), "RAG_QDRANT_URL": ""}  # fmt: skip
    proc = run_cli("check", env=env)
    assert proc.returncode == 1 and "orphans:" in proc.stdout
    proc = run_cli("check", "--repair", "--json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["repairs"]
    assert run_cli("check", env=env).returncode == 0


def test_ops_endpoints_refuse_bad_requests(tmp_path, make_settings, serve) -> None:
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    client = serve(make_settings(config, "memory")).client()
    assert_error_shape(
        client.post("/v1/ops/migrate", json={"collection": "docs"}), 422, "INVALID_REQUEST"
    )
    body = {"collection": "nope", "embedder": {"provider": "hash", "model": "m", "dim": 8}}
    assert_error_shape(client.post("/v1/ops/migrate/plan", json=body), 404, "COLLECTION_NOT_FOUND")
    body = {"collection": "docs", "embedder": {"provider": "word2vec", "model": "m", "dim": 8}}
    error = assert_error_shape(client.post("/v1/ops/migrate", json=body), 422, "INVALID_REQUEST")
    assert "embedder.provider" in error["message"]
    rollback = client.post("/v1/ops/migrate", json={"collection": "docs", "rollback": True})
    assert_error_shape(rollback, 409, "NO_PREVIOUS_COLLECTION")
    assert_error_shape(client.post("/v1/ops/check", json={"sample": -1}), 422, "INVALID_REQUEST")
    assert client.post("/v1/ops/drop-old", json={"collection": "docs"}).json()["dropped"] == []


def test_client_hanging_up_cancels_the_migration_before_the_swap(
    tmp_path, make_settings, serve
) -> None:
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, dim=768)})
    server = serve(make_settings(config, "memory"))
    fill(server.hub.collection("docs"), kb)
    write_api(server.hub.collection("docs"), range(6, 40), 4)  # > 2 batches of 64
    with SlowUpstream(dim=32, open_for=3) as upstream:  # the probe + the first batch
        body = {"collection": "docs", "embedder": upstream.embedder()}
        answered = _migrations_answered(server)
        with (
            server.client() as client,
            client.stream("POST", "/v1/ops/migrate", json=body) as stream,
        ):
            lines = stream.iter_lines()  # kept: a dropped line iterator closes the response at once
            assert json.loads(next(lines))["event"] == "plan"
            wait_for(lambda: len(upstream.calls("/v1/embeddings")) > 3)  # the second batch asked
        # the operator hit Ctrl-C mid-copy; once the server has seen it (the request is counted
        # when its response is over), the batch in flight finishes, then the run stops
        wait_for(lambda: _migrations_answered(server) > answered)
        upstream.gate.set()
        events = wait_for(lambda: _migrate(server, body))
    result = events[-1]["result"]
    assert result["previous"] == "docs__v1" and result["live"] == "docs__v2"
    assert result["unchanged"] == 128  # the cancelled run's two batches, kept and resumed


def _migrations_answered(server) -> float:
    """POST /v1/ops/migrate requests whose response is over, from the server's own counter."""
    prefix = 'rag_http_requests_total{method="POST",route="/v1/ops/migrate",status="2xx"} '
    with server.client() as client:
        text = client.get("/metrics").text
    line = next((row for row in text.splitlines() if row.startswith(prefix)), prefix + "0")
    return float(line.rsplit(" ", 1)[1])


def _migrate(server, body) -> list[dict] | None:
    """A migration's events; None while an earlier one still holds the collection (409)."""
    response = server.client().post("/v1/ops/migrate", json=body)
    if response.status_code == 409:
        return None
    return [json.loads(line) for line in response.text.splitlines()]


def test_a_second_migration_is_refused_before_its_stream_starts(
    tmp_path, make_settings, open_hub
) -> None:
    """The route holds the collection from its check to the migration's end: a second request is
    a 409 up front, never a 200 whose stream then fails (the check used to be let go at once)."""
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    hub = open_hub(make_settings(config, "memory"))
    fill(hub.collection("docs"), kb)
    bigger = {"provider": "hash", "model": "hash-big", "dim": 128}
    body = MigrateBody(collection="docs", embedder=bigger)
    first = ops.migrate(body, hub)  # the response, not yet sent: its migration holds the claim
    with pytest.raises(MigrationInProgress):
        ops.migrate(body, hub)
    events = anyio.run(_events, first)
    assert [e["event"] for e in events[:1] + events[-1:]] == ["plan", "done"]
    again = anyio.run(_events, ops.migrate(body, hub))  # the claim ended with the migration
    assert "already holds" in again[-1]["result"]["notes"][0]


async def _events(response) -> list[dict]:
    return [json.loads(line) async for line in response.body_iterator]


def test_a_kb_file_with_nothing_to_index_is_no_error(tmp_path, make_settings, serve) -> None:
    """A .jsonl upload whose every line is refused indexes as 0 chunks (each line logged); the
    check called it "not indexed", an error that --repair could never clear."""
    from tests.uploads.conftest import finished, upload

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("Refunds are possible within 30 days.")
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    server = serve(make_settings(config, "edge"))
    refused = b'{"text": 5}\n{broken\n{"text": "x", "metadata": {"a": {"b": 1}}}\n'
    with server.client() as http:
        assert http.post("/v1/rag/reload", json={}).status_code == 200
        job = finished(http, upload(http, [("refused.jsonl", refused)]).json()["id"])
        assert job["status"] == "done" and job["files"][0]["chunks"] == 0, job
        report = http.post("/v1/ops/check", json={}).json()
        assert report["exit_code"] == 0, report["findings"]
        (finding,) = report["findings"]
        assert finding["severity"] == "warning" and finding["subject"] == "refused.jsonl"
        assert "nothing to index" in finding["detail"]
        (kb / "faq.md").unlink()  # a real problem is still one
        assert http.post("/v1/ops/check", json={}).json()["exit_code"] == 1
