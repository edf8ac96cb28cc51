"""/v1/ops/backup* and /v1/ops/restore: backups taken and restored inside the server (admin key),
so `rag-hub backup` and `rag-hub restore` work while it owns the embedded store. A backup is a job
of the hub's (/v1/jobs/{id}); GET /v1/ops/backup/jobs/{id} answers it as it always has."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Response

from rag_api.access.grant import audit
from rag_api.http.auth import require_admin
from rag_api.http.deps import HubDep, SettingsDep
from rag_api.jobs import models as job_models
from rag_api.ops.backup.jobs import backup_view, start_backup
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.retention import list_backups
from rag_api.ops.interface import BACKUP, RESTORE, BackupRequest, RestoreRequest

router = APIRouter(tags=["ops"])
ADMIN = [Depends(require_admin)]
EXACT = {"response_model_exclude_unset": True}


@router.post(
    BACKUP.path,
    dependencies=ADMIN,
    status_code=202,
    response_model=job_models.BackupJobAnswer,
    **EXACT,
)
def backup(body: BackupRequest, hub: HubDep, response: Response) -> dict[str, Any]:
    """Start a backup: 202 with its job (follow it at `Location`, or at /v1/jobs/{id})."""
    job = start_backup(hub, body.collections, str(Path(body.to)) if body.to else None)
    audit("backup", ",".join(body.collections or ["*"]), job=job["id"])
    response.headers["Location"] = f"/v1/ops/backup/jobs/{job['id']}"
    return job


@router.get(
    "/v1/ops/backup/jobs/{job_id}",
    dependencies=ADMIN,
    response_model=job_models.BackupJobAnswer,
    **EXACT,
)
def backup_job(job_id: str, hub: HubDep) -> dict[str, Any]:
    """A backup job: queued, running, done (with its result) or failed (with its error)."""
    found = hub.jobs.get(job_id)
    if found["kind"] != "backup":
        raise hub.jobs.missing(job_id)
    return backup_view(found)


@router.get("/v1/ops/backups", dependencies=ADMIN)
def backups(settings: SettingsDep) -> dict[str, Any]:
    """The backups in RAG_BACKUP_DIR, newest first, with their sizes and ages."""
    now = datetime.now(UTC)
    listed = [b.as_dict(now) for b in reversed(list_backups(settings.backups_path))]
    return {"dir": str(settings.backups_path), "backups": listed}


@router.post(RESTORE.path, dependencies=ADMIN)
def restore(body: RestoreRequest, hub: HubDep) -> dict[str, Any]:
    """Verify a backup, restore it beside the live collection and swap the alias."""
    result = restore_backup(
        hub, Path(body.backup), body.collections, body.as_name, body.with_config
    )
    restored = {
        each.collection: {"live": each.live, "points": each.points} for each in result.restored
    }
    audit("restore", ",".join(restored) or "-", backup=body.backup, restored=restored)
    return result.as_dict()
