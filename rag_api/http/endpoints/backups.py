"""/v1/ops/backup* and /v1/ops/restore: backups taken and restored inside the server (admin key),
so `rag-hub backup` and `rag-hub restore` work while it owns the embedded store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Response
from pydantic import ConfigDict, Field

from rag_api.access.grant import audit
from rag_api.http.auth import require_admin
from rag_api.http.deps import HubDep, SettingsDep
from rag_api.ops.backup.jobs import BackupJobs
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.retention import list_backups
from rag_api.schema import Body

router = APIRouter(prefix="/v1/ops", tags=["ops"])
ADMIN = [Depends(require_admin)]


class BackupBody(Body):
    model_config = ConfigDict(extra="forbid")

    collections: list[str] | None = None  # default: every configured collection
    to: str | None = None  # a folder on the server's machine (default RAG_BACKUP_DIR)


class RestoreBody(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    backup: str  # the backup folder, on the server's machine
    collections: list[str] | None = None
    as_name: str | None = Field(default=None, alias="as")
    with_config: bool = False


@router.post("/backup", dependencies=ADMIN, status_code=202)
def backup(body: BackupBody, hub: HubDep, response: Response) -> dict[str, Any]:
    """Start a backup: 202 with its job (follow it at `Location`)."""
    job = BackupJobs.of(hub).submit(body.collections, Path(body.to) if body.to else None)
    audit("backup", ",".join(body.collections or ["*"]), job=job.id)
    response.headers["Location"] = f"/v1/ops/backup/jobs/{job.id}"
    return job.as_dict()


@router.get("/backup/jobs/{job_id}", dependencies=ADMIN)
def backup_job(job_id: str, hub: HubDep) -> dict[str, Any]:
    """A backup job: queued, running, done (with its result) or failed (with its error)."""
    return BackupJobs.of(hub).get(job_id).as_dict()


@router.get("/backups", dependencies=ADMIN)
def backups(settings: SettingsDep) -> dict[str, Any]:
    """The backups in RAG_BACKUP_DIR, newest first, with their sizes and ages."""
    now = datetime.now(UTC)
    listed = [b.as_dict(now) for b in reversed(list_backups(settings.backups_path))]
    return {"dir": str(settings.backups_path), "backups": listed}


@router.post("/restore", dependencies=ADMIN)
def restore(body: RestoreBody, hub: HubDep) -> dict[str, Any]:
    """Verify a backup, restore it beside the live collection and swap the alias."""
    result = restore_backup(
        hub, Path(body.backup), body.collections, body.as_name, body.with_config
    )
    for each in result.restored:
        audit("restore", each.collection, backup=body.backup, live=each.live, points=each.points)
    return result.as_dict()
