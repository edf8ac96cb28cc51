"""A collection's sources (rag_api.sources): what each holds and how its syncs went (reader key),
and a sync on demand (a key that may write the collection; audited), a job followed at
/v1/jobs/{id} like every job of the hub's."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response

from rag_api.access.grant import audit
from rag_api.http.auth import require_reader, require_writer
from rag_api.http.deps import HubDep
from rag_api.jobs import models as job_models
from rag_api.ops.interface import SYNC, SyncBody
from rag_api.sources.models import SourcesStatus

router = APIRouter(tags=["sources"])
EXACT = {"response_model_exclude_unset": True}


@router.get(
    "/v1/collections/{collection}/sources",
    dependencies=[Depends(require_reader)],
    response_model=SourcesStatus,
)
def sources(collection: str, hub: HubDep) -> dict[str, Any]:
    """Each source of the collection: its documents and chunks in the collection, its last sync
    (its counts, or its error), failures in a row, when the next scheduled sync is due, and the
    sync job waiting or running."""
    return hub.sources.status(collection)


@router.post(
    SYNC.path,
    dependencies=[Depends(require_writer)],
    status_code=202,
    response_model=job_models.JobAnswer,
    **EXACT,
)
def sync(
    collection: str, source: str, hub: HubDep, response: Response, body: SyncBody | None = None
) -> dict[str, Any]:
    """Sync the source now: 202 with its job (at `Location`); a sync of it that waits already is
    the one answered. `prune` removes a mass of vanished documents, `force` reads every one."""
    asked = body or SyncBody()
    job = hub.sources.start_sync(collection, source, prune=asked.prune, force=asked.force)
    audit("sync", collection, source=source, job=job["id"], prune=asked.prune, force=asked.force)
    response.headers["Location"] = f"/v1/jobs/{job['id']}"
    return job
