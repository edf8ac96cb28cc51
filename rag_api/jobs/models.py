"""What the job routes answer (documented in /openapi.json; see rag_api.http.answers): one shape
for every kind of job (rag_api.jobs.job.Job.view)."""

from __future__ import annotations

from typing import Any, Literal

from rag_api.schema import Answer

Kind = Literal["upload", "backup", "check", "migrate", "sync"]
# `indexing`: an upload job's word for running
Status = Literal["queued", "running", "indexing", "done", "failed"]
FileStatus = Literal["queued", "indexing", "done", "failed"]


class JobFileAnswer(Answer):
    path: str  # relative to the kb folder, POSIX
    size: int
    status: FileStatus
    chunks: int | None  # the file's chunks once indexed
    embedded: int  # chunks embedded for this job
    skipped: int  # chunks not embedded: the same text was stored already (vector reused)
    error: str | None
    progress: str | None = None  # while indexing, where a long read has got ("OCR page 3/12")


class ProgressAnswer(Answer):
    # "files" (an upload), "copy", "catch-up 1", "final catch-up" (a migration), "documents" (a
    # source's sync)
    phase: str
    done: int
    total: int  # 0: not known yet (a crawl)
    # a sync's counts so far: listed, indexed, unchanged, failed, removed, bytes, and `eta_s`
    # (seconds left, when the total is known)
    detail: dict[str, Any] | None = None


class ErrorAnswer(Answer):
    code: str
    message: str


class JobAnswer(Answer):
    """A job: queued, running (an upload: indexing), done with its result, or failed with its
    error. An upload job is done when every file was indexed, failed when any was not."""

    id: str
    kind: Kind
    status: Status
    collection: str | None  # the one collection it works on; null for several
    collections: list[str]
    created_at: str  # ISO 8601, UTC
    started_at: str | None
    finished_at: str | None
    progress: ProgressAnswer | None
    request: dict[str, Any] | None  # what was asked: a backup's folder, a check's sample, ...
    result: Any  # a backup's, check's, migration's or sync's answer; an upload's chunk counts
    error: ErrorAnswer | None
    files: list[JobFileAnswer] | None = None  # an upload job's files


class JobList(Answer):
    jobs: list[JobAnswer]  # the most recent first


class BackupJobAnswer(Answer):
    """A backup job as POST /v1/ops/backup and GET /v1/ops/backup/jobs/{id} answer it."""

    id: str
    collections: list[str] | None  # as asked (null: every collection)
    to: str | None
    status: Literal["queued", "running", "done", "failed"]
    created_at: str
    finished_at: str | None
    result: dict[str, Any] | None
    error: ErrorAnswer | None
