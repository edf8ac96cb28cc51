"""The folder indexer's state (GET /v1/indexer/status) and the hub's metrics (GET /metrics).

The watcher runs in this process only under `rag-hub serve --watch`; otherwise both say it is off.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

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
) -> Callable[[str], bool] | None:
    """Which collections' series the scraper sees (None: all). /metrics needs, when keys are
    set and RAG_METRICS_PUBLIC is not, a key that reads every collection or one with the
    `metrics` scope, which sees the series of the collections it may read and of none."""
    if settings.metrics_public:
        return None
    principal = await principal_of(request, keyring, declared)
    if principal is not None and principal.metrics:
        return None if principal.may("read", EVERY_COLLECTION) else partial(principal.may, "read")
    authorize(request, principal, "read")
    if principal is not None and not principal.may("read", EVERY_COLLECTION):
        raise Forbidden(
            "/metrics names every collection: it needs a key that reads them all, or a key "
            "with the metrics scope (rag-hub keys create --metrics)"
        )
    return None


Shown = Annotated[Callable[[str], bool] | None, Depends(metrics_reader)]


@router.get("/metrics", response_class=Response)
def metrics(hub: HubDep, shown: Shown) -> Response:
    """Prometheus metrics: requests, latencies, embeddings, LLM, store, indexer, process."""
    text = exposition(_points(hub), _circuits(hub), indexer_status(hub.watcher), shown)
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
