"""The typed operations (rag_api.ops.interface): each declared one is a route of the app, and
LocalOps (this process) and OpsClient (the server, generic over the declarations) give the same
typed answers to the same requests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fastapi.routing import APIRoute

from rag_api.answering.models import QueryBody
from rag_api.cli.ops_client import OpsClient
from rag_api.http.app import create_app
from rag_api.http.openai_errors import app_routes
from rag_api.ops.backup.take import BackupResult
from rag_api.ops.check.findings import CheckReport, CollectionResult, Finding, Repair
from rag_api.ops.interface import (
    BACKUP,
    CHECK,
    COLLECTIONS,
    DROP_OLD,
    MIGRATE,
    OPERATIONS,
    PLAN,
    QUERY,
    BackupRequest,
    CheckRequest,
    CollectionRequest,
    Nothing,
    OnCollection,
    Ops,
)
from rag_api.ops.local import LocalOps
from rag_api.ops.migrate.run import MigrateBody, MigrationPlan, MigrationResult
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config

KEY = "admin-secret"
BIGGER = {"provider": "hash", "model": "hash-big", "dim": 128}


def test_each_declared_operation_is_a_route_of_the_app() -> None:
    app = create_app(Settings())
    routes = {
        (method, route.path)
        for route in app_routes({"app": app})
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    assert [op.name for op in OPERATIONS if (op.method, op.path) not in routes] == []
    assert len({op.name for op in OPERATIONS}) == len(OPERATIONS)
    assert all(callable(getattr(LocalOps, op.name, None)) for op in OPERATIONS)


def test_a_check_report_comes_back_from_its_document() -> None:
    report = CheckReport(
        store="data/qdrant",
        repair=True,
        started_at="2026-01-01T00:00:00+00:00",
        seconds=1.23456,
        results=[
            CollectionResult(
                "docs", "docs__v1", 12,
                findings=[Finding("docs", "orphans", "error", "2 orphans", "a.md", True, True)],
                repairs=[Repair("docs", "delete", "2 orphans")],
                last_backup={"taken_at": "x", "age_h": 1.0, "path": "/b"},
            ),
            CollectionResult("notes", skipped="disabled"),
        ],
        store_findings=[Finding("", "disk", "error", "low on space")],
    )  # fmt: skip
    document = report.as_dict()
    assert CheckReport.from_dict(document).as_dict() == document
    failed = CheckReport.failed("STORE_UNAVAILABLE", "down").as_dict()
    assert CheckReport.from_dict(failed).as_dict() == failed


def test_local_and_server_ops_answer_alike(tmp_path: Path, make_settings, serve) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("# Refunds\n\nRefunds are possible within 30 days.\n")
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    settings = make_settings(config, "memory", admin_api_key=KEY)
    server = serve(settings)
    local: Ops = LocalOps(server.hub)
    remote: Ops = OpsClient(settings)
    assert remote.where == f"the rag-hub server at {server.url}"
    with server.client(headers={"Authorization": f"Bearer {KEY}"}) as http:
        assert http.post("/v1/rag/reload", json={"collection": "docs"}).status_code == 200

    listed = [ops.run(COLLECTIONS, Nothing()) for ops in (local, remote)]
    assert listed[0] == listed[1] and listed[0].collections[0].points == 1

    asked = QueryBody(query="refunds", generate=False)
    answers = [
        ops.run(QUERY, OnCollection(collection="docs", body=asked)) for ops in (local, remote)
    ]
    assert answers[0].sources == answers[1].sources and answers[0].sources

    checks = [ops.run(CHECK, CheckRequest(sample=0)) for ops in (local, remote)]
    assert all(isinstance(c, CheckReport) and c.exit_code == 0 for c in checks)
    assert [c.results[0].summary() for c in checks[:1]] == [checks[1].results[0].summary()]

    body = MigrateBody(collection="docs", embedder=BIGGER)
    plans = [ops.run(PLAN, body) for ops in (local, remote)]
    assert isinstance(plans[1], MigrationPlan) and plans[0] == plans[1]
    assert plans[1].target == "docs__v2" and plans[1].embedder.dim == 128

    backups = [ops.run(BACKUP, BackupRequest(collections=["docs"])) for ops in (local, remote)]
    assert all(isinstance(b, BackupResult) for b in backups)
    assert [b.collections["docs"]["points"] for b in backups] == [1, 1]

    migrated = remote.run(MIGRATE, body)  # the server's event stream
    assert isinstance(migrated, MigrationResult) and migrated.live == "docs__v2"
    back = local.run(MIGRATE, MigrateBody(collection="docs", rollback=True))
    assert back.live == "docs__v1" and back.previous == "docs__v2"
    dropped = remote.run(DROP_OLD, CollectionRequest(collection="docs"))
    assert dropped.collection == "docs" and dropped.dropped == ["docs__v2"]

    kinds = [job["kind"] for job in server.hub.jobs.list()]  # both ran their jobs in this hub
    assert kinds == ["migrate", "migrate", "backup", "backup", "check", "check"]
    assert replace(checks[0], seconds=0, started_at="") == replace(
        checks[1], seconds=0, started_at=""
    )
