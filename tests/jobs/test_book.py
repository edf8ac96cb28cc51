"""The hub's jobs (rag_api.jobs.book.Jobs): a job's life, the error a failed one carries, the
bounded history per kind, what a caller may see, and the kinds kept on disk across a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.errors import CollectionNotFound, JobNotFound, MigrationInProgress
from rag_api.jobs.book import Jobs
from rag_api.jobs.job import JobFile
from rag_api.ops.check.findings import CheckReport


def test_work_run_as_a_job_is_done_with_its_answer_and_its_progress() -> None:
    jobs = Jobs()
    job = jobs.create("backup", ["docs"], request={"to": None})
    assert jobs.get(job.id)["status"] == "queued"

    def work(report):
        report("copy", 1, 2)
        assert jobs.get(job.id)["status"] == "running"
        assert jobs.get(job.id)["progress"] == {"phase": "copy", "done": 1, "total": 2}
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
    with pytest.raises(JobNotFound, match="RAG_UPLOAD_HISTORY"):
        jobs.get(backups[0].id)


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


def test_a_kept_kind_outlives_a_restart(tmp_path: Path) -> None:
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
    assert after.get("old")["collection"] == "docs" and after.get("old")["status"] == "indexing"
    assert [j["kind"] for j in after.list()] == ["upload", "upload"]
    assert not (folder / "broken.json").exists()


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
