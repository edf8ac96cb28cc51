"""/v1/jobs: every job of the hub (uploads, backups, checks, migrations) in one shape (reader key).

A job on a collection the key may not read is not found, as an unknown one (a job on several
collections: each must be readable); backups and migrations, which name server paths and are
started with the admin key, are seen only with a key that may run operations. The kinds' own routes answer as they always have:
POST /v1/collections/{c}/files answers its upload job in this shape, POST /v1/ops/backup and
GET /v1/ops/backup/jobs/{id} a backup job in theirs (rag_api.http.endpoints.backups).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from rag_api.access.grant import allowed, current
from rag_api.http.auth import require_reader
from rag_api.http.deps import HubDep
from rag_api.jobs import models as job_models

router = APIRouter(prefix="/v1", tags=["jobs"], dependencies=[Depends(require_reader)])
EXACT = {"response_model_exclude_unset": True}


OPERATIONS = ("backup", "migrate")  # the kinds only an admin key starts and sees


def readable(collection: str) -> bool:
    """Whether the request's key may read `collection`, and so see its jobs."""
    return allowed(collection, "read")


def admin() -> bool:
    """Whether the request's key may run operations (and so see their jobs)."""
    grant = current.get()
    return grant is None or grant.principal.admin


@router.get("/jobs", response_model=job_models.JobList, **EXACT)
def jobs(
    hub: HubDep,
    kind: Annotated[job_models.Kind | None, Query(description="only jobs of this kind")] = None,
    collection: Annotated[str | None, Query(description="only jobs on this collection")] = None,
    status: Annotated[job_models.Status | None, Query(description="only jobs in it")] = None,
) -> dict[str, Any]:
    """Recent jobs, the most recent first: the last RAG_UPLOAD_HISTORY upload jobs, the last 50
    of each other kind."""
    found = hub.jobs.list(kind, collection, status, visible=readable)
    return {"jobs": [job for job in found if admin() or job["kind"] not in OPERATIONS]}


@router.get("/jobs/{job_id}", response_model=job_models.JobAnswer, **EXACT)
def job(job_id: str, hub: HubDep) -> dict[str, Any]:
    """One job: its status, progress, and its result or error (an upload's: each file's too)."""
    found = hub.jobs.get(job_id, visible=readable)
    if found["kind"] in OPERATIONS and not admin():
        raise hub.jobs.missing(job_id)
    return found
