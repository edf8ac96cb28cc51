"""/v1/jobs on a live hub (embedded store, hash embedder): upload, backup, check and migration jobs
in one shape, a scoped key seeing only its collections' jobs, the older job routes answering as
they always have, and a failed job carrying its error."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api.access.keys import KeysFile
from rag_api.jobs.models import BackupJobAnswer, JobAnswer
from tests.conftest import LiveServer, assert_error_shape, hash_collection, wait_for, write_config
from tests.uploads.conftest import finished, upload

ADMIN, READER = "admin-secret", "reader-secret"
GUIDE = b"# Warranty\n\nThe heat pump carries a five year warranty on the compressor.\n"
BIGGER = {"provider": "hash", "model": "hash-big", "dim": 128}
OLD_BACKUP_KEYS = {
    "id",
    "collections",
    "to",
    "status",
    "created_at",
    "finished_at",
    "result",
    "error",
}
OLD_UPLOAD_KEYS = {"id", "status", "collection", "created_at", "finished_at", "files"}


@dataclass
class World:
    server: LiveServer
    admin: httpx.Client
    reader: httpx.Client
    soporte: httpx.Client  # a scoped key that reads soporte only
    tmp: Path


@pytest.fixture
def world(tmp_path: Path, make_settings, serve) -> World:
    folders = {}
    for name in ("docs", "soporte"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "faq.md").write_text(f"# {name}\n\nRefunds take 30 days in {name}.\n")
    config = write_config(
        tmp_path / "collections.yaml",
        {name: hash_collection(kb) for name, kb in folders.items()},
    )
    settings = make_settings(config, api_key=READER, admin_api_key=ADMIN)
    scoped = KeysFile(settings.keys_path).create("other team", ["soporte"], [])[1]
    server = serve(settings)

    def client(key: str) -> httpx.Client:
        return server.client(headers={"Authorization": f"Bearer {key}"})

    return World(server, client(ADMIN), client(READER), client(scoped), tmp_path)


def documented(job: dict[str, Any]) -> bool:
    """The job is what JobAnswer documents, key for key."""
    return JobAnswer.model_validate(job).model_dump(mode="json", exclude_unset=True) == job


def ended(http: httpx.Client, path: str) -> dict[str, Any]:
    return wait_for(lambda: (j := http.get(path).json())["status"] in ("done", "failed") and j, 60)


@pytest.mark.slow
def test_v1_jobs_lists_upload_backup_check_and_migration_jobs(world: World) -> None:
    admin = world.admin
    uploaded = finished(admin, upload(admin, [("guide.md", GUIDE)]).json()["id"])
    checked = admin.post("/v1/ops/check", json={"collection": "docs", "sample": 0})
    assert checked.status_code == 200, checked.text
    started = admin.post("/v1/ops/backup", json={"collections": ["docs"]})
    assert started.status_code == 202, started.text
    backed_up = ended(admin, f"/v1/jobs/{started.json()['id']}")
    body = {"collection": "docs", "embedder": BIGGER}
    streamed = admin.post("/v1/ops/migrate", json=body)
    events = [json.loads(line) for line in streamed.text.splitlines()]
    assert events[-1]["event"] == "done", events[-1]

    listed = admin.get("/v1/jobs").json()["jobs"]
    assert [j["kind"] for j in listed] == ["migrate", "backup", "check", "upload"]
    assert all(documented(job) for job in listed)
    assert all(j["status"] == "done" and j["collection"] == "docs" for j in listed)
    migrated, backup, check, upload_job = listed
    assert migrated["result"] == events[-1]["result"]
    assert migrated["request"] == events[0]["plan"]  # the plan it carried out
    assert migrated["progress"]["phase"] == "final catch-up"
    assert backup == backed_up and Path(backup["result"]["path"]).is_dir()
    assert check["result"] == checked.json() and check["request"]["sample"] == 0
    assert upload_job == uploaded and upload_job["result"]["chunks"] == 1

    def ids(query: str) -> list[str]:
        answer = admin.get("/v1/jobs" + query)
        assert answer.status_code == 200, answer.text
        return [j["id"] for j in answer.json()["jobs"]]

    assert ids("?kind=backup") == [backup["id"]]
    assert ids("?kind=check&collection=docs&status=done") == [check["id"]]
    assert ids("?collection=soporte") == ids("?status=failed") == []
    assert_error_shape(admin.get("/v1/jobs?kind=nope"), 422, "INVALID_REQUEST")
    assert admin.get(f"/v1/jobs/{migrated['id']}").json() == migrated


@pytest.mark.slow
def test_a_scoped_key_does_not_see_another_collections_jobs(world: World) -> None:
    admin, soporte = world.admin, world.soporte
    docs_job = finished(admin, upload(admin, [("guide.md", GUIDE)]).json()["id"])
    own = finished(admin, upload(admin, [("guia.md", GUIDE)], "soporte").json()["id"])
    every = admin.post("/v1/ops/backup", json={}).json()  # a backup of both collections
    ended(admin, f"/v1/jobs/{every['id']}")

    assert [j["id"] for j in soporte.get("/v1/jobs").json()["jobs"]] == [own["id"]]
    assert soporte.get("/v1/jobs?collection=docs").json() == {"jobs": []}
    assert soporte.get(f"/v1/jobs/{own['id']}").json() == own
    unknown = assert_error_shape(soporte.get("/v1/jobs/0123abcd"), 404, "JOB_NOT_FOUND")
    for hidden in (docs_job["id"], every["id"]):
        error = assert_error_shape(soporte.get(f"/v1/jobs/{hidden}"), 404, "JOB_NOT_FOUND")
        assert error["message"].replace(hidden, "0123abcd") == unknown["message"]
    assert "docs" not in soporte.get("/v1/jobs").text

    report = soporte.post("/v1/ops/check", json={"sample": 0}).json()  # the key's collections
    assert [r["name"] for r in report["collections"]] == ["soporte"]
    mine = soporte.get("/v1/jobs?kind=check").json()["jobs"]
    assert [j["collections"] for j in mine] == [["soporte"]]
    # a check of a collection it may not see ran nothing: its report says so, and no job
    refused = soporte.post("/v1/ops/check", json={"collection": "docs", "sample": 0}).json()
    assert refused["error"]["code"] == "COLLECTION_NOT_FOUND"
    assert len(world.reader.get("/v1/jobs?kind=check").json()["jobs"]) == 1
    everything = world.reader.get("/v1/jobs").json()["jobs"]
    assert {j["id"] for j in everything} == {docs_job["id"], own["id"], mine[0]["id"]}
    # a backup names server paths and is the admin key's: a reader key does not see it
    assert_error_shape(world.reader.get(f"/v1/jobs/{every['id']}"), 404, "JOB_NOT_FOUND")
    assert every["id"] in {j["id"] for j in admin.get("/v1/jobs").json()["jobs"]}


@pytest.mark.slow
def test_a_read_key_sees_neither_migration_nor_backup_jobs(world: World) -> None:
    """Their plans and results name server paths and models: the admin key's alone."""
    admin, reader = world.admin, world.reader
    uploaded = finished(admin, upload(admin, [("guide.md", GUIDE)]).json()["id"])
    streamed = admin.post("/v1/ops/migrate", json={"collection": "docs", "embedder": BIGGER})
    assert json.loads(streamed.text.splitlines()[-1])["event"] == "done", streamed.text
    started = admin.post("/v1/ops/backup", json={"collections": ["docs"]}).json()
    ended(admin, f"/v1/jobs/{started['id']}")
    every = {j["kind"]: j["id"] for j in admin.get("/v1/jobs").json()["jobs"]}
    assert set(every) == {"migrate", "backup", "upload"}

    assert [j["id"] for j in reader.get("/v1/jobs").json()["jobs"]] == [uploaded["id"]]
    assert reader.get("/v1/jobs?kind=migrate").json() == {"jobs": []}
    for kind in ("migrate", "backup"):
        error = assert_error_shape(reader.get(f"/v1/jobs/{every[kind]}"), 404, "JOB_NOT_FOUND")
        assert every[kind] in error["message"]


def test_the_older_job_routes_answer_as_before(world: World) -> None:
    admin = world.admin
    started = admin.post("/v1/ops/backup", json={"collections": ["docs"]})
    assert started.status_code == 202, started.text
    job = started.json()
    assert set(job) == OLD_BACKUP_KEYS and job["collections"] == ["docs"] and job["to"] is None
    assert started.headers["location"] == f"/v1/ops/backup/jobs/{job['id']}"
    done = ended(admin, started.headers["location"])
    assert set(done) == OLD_BACKUP_KEYS and done["status"] == "done"
    assert BackupJobAnswer.model_validate(done).model_dump(mode="json") == done
    same = admin.get(f"/v1/jobs/{job['id']}").json()
    assert {key: same[key] for key in OLD_BACKUP_KEYS - {"to", "collections"}} == {
        key: done[key] for key in OLD_BACKUP_KEYS - {"to", "collections"}
    }

    answer = upload(admin, [("guide.md", GUIDE)])
    assert answer.status_code == 202 and set(answer.json()) >= OLD_UPLOAD_KEYS
    assert answer.headers["location"] == f"/v1/jobs/{answer.json()['id']}"
    uploaded = finished(admin, answer.json()["id"])
    assert set(uploaded) >= OLD_UPLOAD_KEYS and uploaded["collection"] == "docs"
    not_a_backup = admin.get(f"/v1/ops/backup/jobs/{uploaded['id']}")
    assert_error_shape(not_a_backup, 404, "JOB_NOT_FOUND")
    assert_error_shape(world.reader.get(started.headers["location"]), 403, "FORBIDDEN")


def test_a_failed_job_carries_its_error(world: World) -> None:
    admin = world.admin
    broken = upload(admin, [("broken.pdf", b"%PDF-1.4\nnot really"), ("ok.md", GUIDE)])
    job = finished(admin, broken.json()["id"])
    assert job["status"] == "failed" and job["result"] is None
    assert job["error"]["code"] == "INDEXING_FAILED"
    assert job["error"]["message"].startswith("1 of 2 files could not be indexed: broken.pdf: ")
    assert "unreadable PDF" in job["error"]["message"]
    assert [f["status"] for f in job["files"]] == ["failed", "done"]

    in_the_way = world.tmp / "not-a-folder"
    in_the_way.write_text("a file where the backup folder should be")
    started = admin.post("/v1/ops/backup", json={"to": str(in_the_way)})
    assert started.status_code == 202, started.text
    failed = ended(admin, f"/v1/jobs/{started.json()['id']}")
    assert failed["status"] == "failed" and failed["error"]["code"] == "INTERNAL_ERROR"
    assert "FileExistsError" in failed["error"]["message"]
    assert admin.get(started.headers["location"]).json()["error"] == failed["error"]
    assert [j["id"] for j in admin.get("/v1/jobs?status=failed").json()["jobs"]] == [
        failed["id"],
        job["id"],
    ]
