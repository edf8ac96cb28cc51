"""The folder indexer's state (GET /v1/indexer/status) and the hub's metrics (GET /metrics).

The watcher runs in this process only under `rag-hub serve --watch`; otherwise both say it is off.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from rag_api.access.grant import EVERY as EVERY_COLLECTION
from rag_api.errors import Forbidden
from rag_api.http.auth import DeclaredBearer, KeyringDep, authorize, principal_of, require_admin
from rag_api.http.deps import SettingsDep, WatcherDep, indexer_status
from rag_api.observability.metrics import exposition

router = APIRouter(tags=["indexer"])


@router.get("/v1/indexer/status", dependencies=[Depends(require_admin)])
def status(watcher: WatcherDep) -> dict[str, Any]:
    """Per collection: files known, queue length, last sync, last error, bad files, counters."""
    return indexer_status(watcher)


async def metrics_reader(
    request: Request, settings: SettingsDep, keyring: KeyringDep, declared: DeclaredBearer = None
) -> None:
    """/metrics needs a key that reads every collection when keys are set, unless
    RAG_METRICS_PUBLIC=1."""
    if not settings.metrics_public:
        principal = await principal_of(request, keyring, declared)
        authorize(request, principal, "read")
        if principal is not None and not principal.may("read", EVERY_COLLECTION):
            raise Forbidden("/metrics names every collection: it needs a key that reads them all")


@router.get("/metrics", dependencies=[Depends(metrics_reader)], response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus metrics: requests, latencies, embeddings, LLM, store, indexer, process."""
    return Response(exposition(request.app), media_type=CONTENT_TYPE_LATEST)
