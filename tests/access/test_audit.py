"""The audit log: every route of the app that changes anything writes exactly one line naming the
route (method and path template), the key, the collection and what changed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api.http.app import create_app
from rag_api.http.openai_errors import app_routes
from tests.conftest import hash_collection, wait_for, write_config
from tests.support.git_repo import Repo

ADMIN = "admin-global-key"
# the routes that take a body or a non-GET method but change nothing, each with why
NOT_WRITES = {
    ("POST", "/query/{collection}"): "a question: retrieval and an answer",
    ("POST", "/v1/chat/completions"): "a question: retrieval and an answer",
    ("POST", "/chat/completions"): "a question: retrieval and an answer",
    ("POST", "/v1/responses"): "a question; with `store` the reply is kept for its own "
    "follow-ups (pruned by age and count), not a change to any collection",
    ("POST", "/responses"): "as /v1/responses",
    ("POST", "/v1/embeddings"): "vectors of the given texts",
    ("POST", "/embeddings"): "vectors of the given texts",
    ("POST", "/v1/rag/chunks/list"): "a read with its filters in the body",
    ("POST", "/v1/rag/search"): "a read with its query in the body",
    ("POST", "/v1/rag/context"): "a read with its query in the body",
    ("POST", "/v1/ops/migrate/plan"): "what a migration would do; changes nothing",
    ("POST", "/v1/collections/{collection}/eval"): "retrieval measured on questions",
    ("POST", "/mcp"): "tool calls: the writing tools audit through hub.kb as the routes do "
    "(tests/mcp/test_mcp_http.py), naming POST /mcp",
    ("DELETE", "/mcp"): "ends an MCP session",
}
# (method, template) -> (collection the line names, the request that writes through it); run in
# this order, each on what the ones before left
Send = Callable[[httpx.Client, dict[str, Any]], httpx.Response]
WRITES: dict[tuple[str, str], tuple[str, Send]] = {
    ("POST", "/v1/rag/reload"): ("docs", lambda h, _: h.post("/v1/rag/reload", json={})),
    ("POST", "/v1/rag/add/document"): (
        "docs",
        lambda h, _: h.post("/v1/rag/add/document", json={"text": "Fees", "source": "crm/1"}),
    ),
    ("POST", "/v1/rag/add/chunks"): (
        "docs",
        lambda h, _: h.post("/v1/rag/add/chunks", json={"items": [{"text": "A note."}]}),
    ),
    ("POST", "/v1/rag/upsert/document"): (
        "docs",
        lambda h, _: h.post("/v1/rag/upsert/document", json={"text": "Fees", "source": "crm/2"}),
    ),
    ("POST", "/v1/rag/chunks/update"): (
        "docs",
        lambda h, _: h.post(
            "/v1/rag/chunks/update",
            json={"index": h.get("/v1/rag/chunks").json()["items"][0]["index"], "new_text": "x"},
        ),
    ),
    ("POST", "/v1/rag/remove"): (
        "docs",
        lambda h, _: h.post("/v1/rag/remove", json={"source_prefix": "crm/"}),
    ),
    ("POST", "/v1/collections/{collection}/files"): (
        "docs",
        lambda h, seen: _job_done(
            h,
            h.post(
                "/v1/collections/docs/files",
                files=[("files", ("b.md", b"# B\n\nReceipts are needed.\n", "text/markdown"))],
            ),
        ),
    ),
    ("DELETE", "/v1/collections/{collection}/files/{path:any}"): (
        "docs",
        lambda h, _: h.delete("/v1/collections/docs/files/b.md"),
    ),
    ("POST", "/v1/collections/{collection}/sources/{source}/sync"): (
        "docs",
        lambda h, _: _job_done(h, h.post("/v1/collections/docs/sources/handbook/sync")),
    ),
    ("POST", "/v1/ops/check"): (
        "docs",
        lambda h, _: h.post("/v1/ops/check", json={"collection": "docs", "repair": True}),
    ),
    ("POST", "/v1/ops/backup"): (
        "docs",
        lambda h, seen: _backed_up(
            h, h.post("/v1/ops/backup", json={"collections": ["docs"]}), seen
        ),
    ),
    ("POST", "/v1/ops/restore"): (
        "docs",
        lambda h, seen: h.post("/v1/ops/restore", json={"backup": seen["backup"]}),
    ),
    ("POST", "/v1/ops/migrate"): (
        "docs",
        lambda h, _: _read_all(
            h.post(
                "/v1/ops/migrate",
                json={
                    "collection": "docs",
                    "embedder": {"provider": "hash", "model": "hash-test", "dim": 32},
                },
            )
        ),
    ),
    ("POST", "/v1/ops/drop-old"): (
        "docs",
        lambda h, _: h.post("/v1/ops/drop-old", json={"collection": "docs"}),
    ),
    ("DELETE", "/v1/responses/{response_id}"): (
        "docs",
        lambda h, _: h.delete(f"/v1/responses/{_stored(h)}"),
    ),
    ("DELETE", "/responses/{response_id}"): (
        "docs",
        lambda h, _: h.delete(f"/responses/{_stored(h)}"),
    ),
}


def _job_done(http: httpx.Client, started: httpx.Response) -> httpx.Response:
    assert started.status_code == 202, started.text
    url = f"/v1/jobs/{started.json()['id']}"
    done = wait_for(lambda: (j := http.get(url).json())["status"] in ("done", "failed") and j)
    assert done["status"] == "done", done
    return started


def _backed_up(http: httpx.Client, started: httpx.Response, seen: dict[str, Any]) -> httpx.Response:
    _job_done(http, started)
    seen["backup"] = http.get("/v1/ops/backups").json()["backups"][0]["path"]
    return started


def _read_all(streamed: httpx.Response) -> httpx.Response:
    assert '"event": "done"' in streamed.text, streamed.text
    return streamed


def _stored(http: httpx.Client) -> str:
    answered = http.post("/v1/responses", json={"model": "docs", "input": "receipts?"})
    assert answered.status_code == 200, answered.text
    return answered.json()["id"]


def _world(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# Refunds\n\nRefunds take 30 days.\n\n## Fees\n\nNo fees.\n")
    repo = Repo(tmp_path / "handbook").write({"badges.md": "# Badges\n\nAt the front desk.\n"})
    repo.commit()
    source = {"name": "handbook", "kind": "git", "repo": str(repo.path)}
    return write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, sources=[source])})


def test_every_route_that_writes_is_audited_or_listed_as_a_non_write(
    tmp_path: Path, make_settings
) -> None:
    app = create_app(make_settings(_world(tmp_path)))
    routes = {
        (method, route.path)
        for route in app_routes({"app": app})
        for method in getattr(route, "methods", None) or ()
        if method not in ("GET", "HEAD")
    }
    assert not set(WRITES) & set(NOT_WRITES)
    assert routes == set(WRITES) | set(NOT_WRITES), "a new route: audit it, or say why not"


@pytest.mark.slow
def test_each_write_route_logs_one_audit_line_naming_route_key_and_collection(
    tmp_path: Path, make_settings, serve, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(make_settings(_world(tmp_path), admin_api_key=ADMIN))
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    seen: dict[str, Any] = {}
    with server.client(headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        for (method, template), (collection, send) in WRITES.items():
            caplog.clear()
            answer = send(http, seen)
            assert answer.status_code in (200, 202), (template, answer.text)
            lines = [r for r in caplog.records if r.name == "rag_api.audit"]
            assert len(lines) == 1, (method, template, [r.getMessage() for r in lines])
            line = lines[0].getMessage()
            assert line.startswith(f"admin (RAG_ADMIN_API_KEY) {method} {template}: "), line
            assert f" on {collection} " in line, line
            assert lines[0].route == f"{method} {template}"
