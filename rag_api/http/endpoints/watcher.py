"""The folder indexer's state (GET /v1/indexer/status) and the hub's metrics (GET /metrics).

The watcher runs in this process only under `rag-hub serve --watch`; otherwise both say it is off.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from rag_api.access.grant import EVERY as EVERY_COLLECTION
from rag_api.errors import Forbidden, RagError
from rag_api.http.auth import DeclaredBearer, authorize, principal_of, require_admin
from rag_api.http.deps import HubDep, KeyringDep, SettingsDep, WatcherDep, indexer_status
from rag_api.hub import Hub
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
def metrics(hub: HubDep) -> Response:
    """Prometheus metrics: requests, latencies, embeddings, LLM, store, indexer, process."""
    text = exposition(_points(hub), _circuits(hub), indexer_status(hub.watcher))
    return Response(text, media_type=CONTENT_TYPE_LATEST)


def _points(hub: Hub) -> dict[str, int]:
    """Points stored per collection; one the store cannot read now is left out (/ready and
    check say why)."""
    points = {}
    for name in hub.collections:
        try:
            info = hub.store.info(name)
        except RagError:
            continue
        points[name] = info.points if info is not None else 0
    return points


def _circuits(hub: Hub) -> dict[str, str]:
    """The state of each collection's LLM server's circuit (none for extractive answers)."""
    breakers = {name: hub.generators.breaker(c.cfg.llm) for name, c in hub.collections.items()}
    return {name: breaker.state for name, breaker in breakers.items() if breaker is not None}
