"""The hub's jobs (rag_api.jobs.book.Jobs): a job's life, the error a failed one carries, the
bounded history per kind, what a caller may see, and the kinds kept on disk across a restart."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from rag_api.errors import CollectionNotFound, JobNotFound, MigrationInProgress
from rag_api.jobs.book import Jobs
from rag_api.jobs.folder import JobFolder
from rag_api.jobs.job import Job, JobFile, Progress
from rag_api.ops.check.findings import CheckReport


def test_work_run_as_a_job_is_done_with_its_answer_and_its_progress() -> None:
    jobs = Jobs()
    job = jobs.create("backup", ["docs"], request={"to": None})
    assert jobs.get(job.id)["status"] == "queued"

    def work(report):
        report("copy", 1, 2)
        assert jobs.get(job.id)["status"] == "running"
        assert jobs.get(job.id)["progress"] == {"phase": "copy", "done": 1, "total": 2}
        report("copy", 2, 2, files=7)  # a kind's own counts
        assert jobs.get(job.id)["progress"]["detail"] == {"files": 7}
        return {"path": "/backups/x"}

    assert jobs.run(job, work) == {"path": "/backups/x"}
    done = jobs.get(job.id)
    assert done["status"] == "done" and done["result"] == {"path": "/backups/x"}
    assert done["error"] is None and done["created_at"] <= done["started_at"] <= done["finished_at"]
    assert done["kind"] == "backup" and done["collection"] == "docs" and "files" not in done


def test_a_failed_job_carries_its_error_in_the_hubs_shape() -> None:
    jobs = Jobs()
    job = jobs.create("migrate", ["docs"])

    def unknown(_):
        raise CollectionNotFound("nope")

    with pytest.raises(CollectionNotFound):
        jobs.run(job, unknown)
    failed = jobs.get(job.id)
    assert failed["status"] == "failed" and failed["result"] is None
    assert failed["error"] == {
        "code": "COLLECTION_NOT_FOUND",
        "message": "collection 'nope' is not configured in collections.yaml",
    }

    crash = jobs.create("backup", [])
    with pytest.raises(ZeroDivisionError):
        jobs.run(crash, lambda _: 1 / 0)
    assert jobs.get(crash.id)["error"] == {
        "code": "INTERNAL_ERROR",
        "message": "internal error: ZeroDivisionError: division by zero",
    }


def test_an_answer_saying_it_could_not_run_fails_its_job_and_is_kept() -> None:
    jobs = Jobs()
    job = jobs.create("check", [])
    report = CheckReport.failed("STORE_UNAVAILABLE", "Qdrant unavailable")
    assert jobs.run(job, lambda _: report) is report
    failed = jobs.get(job.id)
    assert failed["status"] == "failed" and failed["result"]["exit_code"] == 2
    assert failed["error"] == {"code": "STORE_UNAVAILABLE", "message": "Qdrant unavailable"}


def test_the_history_is_bounded_per_kind_and_keeps_unfinished_jobs() -> None:
    jobs = Jobs(history=2, history_of={"upload": 3})
    running = jobs.create("backup", ["docs"])
    jobs.start(running)
    backups = [jobs.create("backup", ["docs"]) for _ in range(3)]
    for job in backups:
        jobs.finish(job, {})
    uploads = [jobs.create("upload", ["docs"], files=[]) for _ in range(4)]
    newest = jobs.create("backup", ["docs"])  # forgets the oldest finished backups
    assert [j["id"] for j in jobs.list(kind="backup")] == [newest.id, running.id]
    assert [j["id"] for j in jobs.list(kind="upload")] == [j.id for j in reversed(uploads)]
    with pytest.raises(JobNotFound, match="RAG_UPLOAD_HISTORY") as missing:
        jobs.get(backups[0].id)
    assert missing.value.message == (
        f"no job '{backups[0].id}': only the last 2 jobs of each kind are kept, and of upload "
        "jobs 3 (RAG_UPLOAD_HISTORY); the files of older uploads are in the kb folder, and "
        "GET /v1/collections/{collection}/files shows their index state"
    )


def test_a_missing_jobs_error_names_the_upload_history_even_when_it_is_the_default() -> None:
    with pytest.raises(JobNotFound) as missing:
        Jobs(history=7).get("gone")
    assert "only the last 7 jobs of each kind are kept, and of upload jobs 7 " in (
        missing.value.message
    )


def test_a_kept_kinds_forgotten_jobs_leave_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "jobs"  # made, parents included, at the first job
    jobs = Jobs(history=2)
    jobs.keep("upload", folder)
    made = [jobs.create("upload", ["docs"], files=[]) for _ in range(3)]
    for job in made:
        jobs.finish(job, {})
    (folder / f"{made[1].id}.json").unlink()  # gone already (a hand's cleanup): no error
    jobs.create("upload", ["docs"], files=[])  # forgets the two oldest finished
    assert not (folder / f"{made[0].id}.json").exists()
    JobFolder(folder, "upload").remove("never-kept")  # quiet
    fewer = Jobs(history=1)  # a restart with a shorter history forgets the oldest at once
    fewer.keep("upload", folder)
    assert len(fewer.list(kind="upload")) == 1


def test_a_job_read_back_is_the_job_written() -> None:
    job = Job("j1", "upload", ["docs"], status="running", started_at="2000-01-01T00:00:00+00:00")
    job.progress = Progress("files", 1, 2, {"indexed": 1})
    job.files = [JobFile("a.md", 3, status="done", chunks=1, embedded=1)]
    assert Job.from_dict(job.as_dict(), "upload") == job
    assert Job.from_dict(job.view(), "upload") == job  # the view's `collection`, `indexing`


def test_filters_and_what_a_caller_may_see() -> None:
    jobs = Jobs()
    docs = jobs.create("upload", ["docs"], files=[JobFile("a.md", 3)])
    both = jobs.create("backup", ["docs", "soporte"])
    soporte = jobs.create("check", ["soporte"])
    jobs.run(soporte, lambda _: {"exit_code": 0})
    newest_first = [soporte.id, both.id, docs.id]
    assert [j["id"] for j in jobs.list()] == newest_first
    assert [j["id"] for j in jobs.list(collection="docs")] == [both.id, docs.id]
    assert [j["id"] for j in jobs.list(status="queued")] == [both.id, docs.id]
    assert [j["id"] for j in jobs.list(kind="check", status="done")] == [soporte.id]

    def only_soporte(name: str) -> bool:
        return name == "soporte"

    assert [j["id"] for j in jobs.list(visible=only_soporte)] == [soporte.id]
    hidden = pytest.raises(JobNotFound)
    with hidden as caught:
        jobs.get(docs.id, visible=only_soporte)
    assert docs.id in caught.value.message
    assert jobs.get(both.id)["collection"] is None  # on two collections


def test_an_upload_job_says_indexing_while_it_runs() -> None:
    jobs = Jobs()
    job = jobs.create("upload", ["docs"], files=[JobFile("a.md", 3)])
    jobs.start(job)
    view = jobs.get(job.id)
    assert view["status"] == "indexing" and view["files"][0]["status"] == "queued"
    assert [j["id"] for j in jobs.list(status="running")] == [job.id]
    assert [j["id"] for j in jobs.list(status="indexing")] == [job.id]


def test_a_kept_kind_outlives_a_restart(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "jobs"
    before = Jobs()
    before.keep("upload", folder)
    done = before.create("upload", ["docs"], files=[JobFile("a.md", 3)])
    before.run(done, lambda _: {"chunks": 1, "embedded": 1, "skipped": 0})
    before.create("check", ["docs"])  # not kept
    # an upload job as the hub wrote it before there were other kinds, cut short by a restart
    old = {"id": "old", "status": "indexing", "collection": "docs", "finished_at": None,
           "created_at": "2000-01-01T00:00:00+00:00",
           "files": [{"path": "b.md", "size": 1, "status": "indexing", "chunks": None,
                      "embedded": 0, "skipped": 0, "error": None}]}  # fmt: skip
    (folder / "old.json").write_text(json.dumps(old))
    (folder / "broken.json").write_text("{")

    after = Jobs()
    after.keep("upload", folder)
    assert after.get(done.id) == before.get(done.id)
    assert [j.id for j in after.unfinished("upload")] == ["old"]
    assert [j["id"] for j in after.list(status="running")] == ["old"]  # `indexing` read back
    assert [f.path for f in after.unfinished("upload")[0].files] == ["b.md"]  # resumed by path
    assert after.get("old")["collection"] == "docs" and after.get("old")["status"] == "indexing"
    assert [j["kind"] for j in after.list()] == ["upload", "upload"]
    assert not (folder / "broken.json").exists()
    said = "upload job broken.json is unreadable and is dropped: Expecting property name"
    assert said in caplog.text


def test_a_claim_is_held_by_one_at_a_time() -> None:
    jobs = Jobs()
    refusal = lambda: MigrationInProgress("busy")  # noqa: E731
    with jobs.claims.hold("migrate:docs", refusal):
        assert jobs.claims.held("migrate:docs")
        with pytest.raises(MigrationInProgress), jobs.claims.hold("migrate:docs", refusal):
            pass
        with jobs.claims.hold("migrate:soporte", refusal):
            pass
    assert not jobs.claims.held("migrate:docs")


def test_a_models_answer_is_kept_as_json() -> None:
    class Answer(BaseModel):
        at: datetime
        path: Path

    jobs = Jobs()
    job = jobs.create("check", ["docs"])
    jobs.run(job, lambda _: Answer(at=datetime(2000, 1, 1, tzinfo=UTC), path=Path("/b")))
    assert jobs.get(job.id)["result"] == {"at": "2000-01-01T00:00:00Z", "path": "/b"}
