"""Syncs over HTTP and from the CLI: POST .../sources/{s}/sync as a job of the writer's (write
scope, audited) with its progress in /v1/jobs, GET .../sources, `rag-hub sync` through a running
server or in its own process, and the schedule."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.conftest import assert_error_shape, hash_collection, run_cli, wait_for, write_config
from tests.sources.conftest import finished, web_block
from tests.sources.test_git import FILES, git_block
from tests.support.git_repo import Repo

ADMIN, READER = "admin-key", "reader-key"


@pytest.fixture
def world(tmp_path: Path) -> Path:
    repo = Repo(tmp_path / "repos" / "handbook")
    repo.write(FILES).commit()
    block = git_block(str(repo.path))
    return write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection(None, sources=[block])}
    )


def test_a_sync_over_http_is_a_job_of_the_writer(world, make_settings, serve, caplog) -> None:
    server = serve(make_settings(world, admin_api_key=ADMIN, api_key=READER))
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    admin = server.client(headers={"Authorization": f"Bearer {ADMIN}"})
    started = admin.post("/v1/collections/docs/sources/handbook/sync")
    assert started.status_code == 202, started.text
    job = started.json()
    assert started.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["kind"] == "sync" and job["request"]["source"] == "handbook"
    done = finished(admin, job["id"])
    assert done["status"] == "done" and done["result"]["indexed"] == 4
    assert done["progress"]["phase"] == "documents" and done["progress"]["detail"]["indexed"] == 4
    audit = [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"]
    assert any(
        "POST /v1/collections/{collection}/sources/{source}/sync: sync on docs" in line
        for line in audit
    )

    reader = server.client(headers={"Authorization": f"Bearer {READER}"})
    listed = reader.get("/v1/collections/docs/sources").json()["sources"]
    assert listed[0]["name"] == "handbook" and listed[0]["documents"] == 4
    assert listed[0]["last"]["status"] == "done" and listed[0]["failures"] == 0
    assert reader.get(f"/v1/jobs/{job['id']}").json()["status"] == "done"
    assert_error_shape(reader.post("/v1/collections/docs/sources/handbook/sync"), 403, "FORBIDDEN")
    missing = admin.post("/v1/collections/docs/sources/wiki/sync")
    assert "handbook" in assert_error_shape(missing, 404, "SOURCE_NOT_FOUND")["message"]
    assert_error_shape(
        admin.post("/v1/collections/nope/sources/x/sync"), 404, "COLLECTION_NOT_FOUND"
    )
    bad = admin.post("/v1/collections/docs/sources/handbook/sync", json={"prune": "yes"})
    assert_error_shape(bad, 422, "INVALID_REQUEST")


@pytest.mark.slow
def test_a_running_syncs_progress_shows_in_its_job(tmp_path, site, make_settings, serve) -> None:
    block = web_block(site, rate=40)  # ~1.5 s: long enough to be seen running
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None, sources=[block])})
    server = serve(make_settings(config))
    http = server.client()
    job = http.post("/v1/collections/docs/sources/help/sync", json={}).json()
    seen = wait_for(
        lambda: (p := http.get(f"/v1/jobs/{job['id']}").json()["progress"]) and p["done"] and p, 30
    )
    assert seen["phase"] == "documents" and {"indexed", "unchanged", "bytes"} <= set(seen["detail"])
    waiting = http.post("/v1/collections/docs/sources/help/sync").json()  # after the running one
    assert waiting["id"] != job["id"] and waiting["status"] == "queued"
    assert http.post("/v1/collections/docs/sources/help/sync").json()["id"] == waiting["id"]
    assert finished(http, job["id"])["status"] == "done"
    assert finished(http, waiting["id"])["result"]["unchanged"] == 54


@pytest.mark.slow
def test_rag_hub_sync_in_its_own_process_and_through_a_server(world, make_settings, serve) -> None:
    data = world.parent / "data"
    env = {"RAG_CONFIG": str(world), "RAG_DATA_DIR": str(data)}
    alone = run_cli("sync", "docs", env=env)
    assert alone.returncode == 0, alone.stderr
    assert "docs/handbook (git): 4 documents (4 indexed, 0 unchanged, 0 failed)" in alone.stdout
    server = serve(make_settings(world, data_dir=data, admin_api_key=ADMIN))
    through = run_cli("sync", "docs", "handbook", "--json", env={**env, "RAG_ADMIN_API_KEY": ADMIN})
    assert through.returncode == 0, through.stderr
    assert json.loads(through.stdout)[0]["unchanged"] == 4
    jobs = server.client(headers={"Authorization": f"Bearer {ADMIN}"}).get("/v1/jobs?kind=sync")
    assert len(jobs.json()["jobs"]) == 1  # the server ran it
    unknown = run_cli("sync", "docs", "wiki", env={**env, "RAG_ADMIN_API_KEY": ADMIN})
    assert unknown.returncode == 1 and "no source 'wiki'" in unknown.stderr


@pytest.mark.slow
def test_a_scheduled_source_syncs_by_itself(tmp_path, make_settings, serve) -> None:
    repo = Repo(tmp_path / "repos" / "handbook")
    repo.write(FILES).commit()
    block = git_block(str(repo.path), every="1s")
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None, sources=[block])})
    server = serve(make_settings(config))
    http = server.client()
    wait_for(
        lambda: http.get("/v1/collections/docs/sources").json()["sources"][0]["documents"] == 4, 30
    )
    repo.write({"docs/later.md": "# Later\n\nAdded after the server started.\n"}).commit()
    wait_for(
        lambda: http.get("/v1/collections/docs/sources").json()["sources"][0]["documents"] == 5, 30
    )
    jobs = http.get("/v1/jobs?kind=sync").json()["jobs"]
    assert jobs and all(job["request"]["by"] == "schedule" for job in jobs)


def test_an_api_document_may_not_take_a_sources_name(world, make_settings, serve) -> None:
    server = serve(make_settings(world))
    http = server.client()
    for route, body in (
        ("/v1/rag/upsert/document", {"text": "Mine.", "source": "handbook:docs/install.md"}),
        ("/v1/rag/add/document", {"text": "Mine.", "source": "handbook:notes"}),
        ("/v1/rag/add/chunks", {"items": [{"text": "Mine.", "source": "handbook:x"}]}),
    ):
        refused = http.post(route, json={**body, "collection": "docs"})
        assert "source 'handbook'" in assert_error_shape(refused, 422, "INVALID_REQUEST")["message"]
    assert http.post(
        "/v1/rag/upsert/document",
        json={"text": "Mine.", "source": "handbooks:notes", "collection": "docs"},
    ).is_success
