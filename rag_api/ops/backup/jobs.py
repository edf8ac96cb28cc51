"""Backups as jobs of the hub's (kind `backup`): inside the server they run in its `backup` lane,
one at a time in the order asked (a backup reads whole collections: two at once would only
compete for the same disk), followed at /v1/jobs/{id}; `rag-hub backup` in its own process runs
the same job at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_api.catalog import Catalog
from rag_api.jobs.job import Job
from rag_api.jobs.lane import Report, Work
from rag_api.ops.backup.take import BackupResult, take_backup


def backup_job(
    hub: Catalog, collections: list[str] | None, to: str | None, in_server: bool
) -> tuple[Job, Work]:
    """The job of a backup of `collections` (default: every one) into `to` (default
    RAG_BACKUP_DIR), and its work; an unknown name is refused now (404), not as a failed job."""
    names = [hub.collection(name, enabled_only=False).name for name in collections or []]
    job = hub.jobs.create(
        "backup", names or list(hub.collections), request={"collections": collections, "to": to}
    )

    def work(_: Report) -> BackupResult:
        return take_backup(hub, collections, None if to is None else Path(to), in_server)

    return job, work


def start_backup(hub: Catalog, collections: list[str] | None, to: str | None) -> dict[str, Any]:
    """Queue a backup in the server's `backup` lane; its job as the backup routes show it."""
    job, work = backup_job(hub, collections, to, in_server=True)
    hub.jobs.lane("backup").submit(job, work)
    return backup_view(hub.jobs.get(job.id))


def backup_view(job: dict[str, Any]) -> dict[str, Any]:
    """A backup job as POST /v1/ops/backup and GET /v1/ops/backup/jobs/{id} have always answered
    it: the collections and folder asked for, no kind nor progress."""
    asked = job["request"]
    return {
        "id": job["id"],
        "collections": asked["collections"],
        "to": asked["to"],
        "status": job["status"],
        "created_at": job["created_at"],
        "finished_at": job["finished_at"],
        "result": job["result"],
        "error": job["error"],
    }
