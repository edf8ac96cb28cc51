"""The folder indexer's state: GET /v1/indexer/status (JSON) and GET /metrics (Prometheus text).

The watcher runs in this process only under `rag-hub serve --watch`; otherwise both say it is off.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse

from rag_api.auth import require_admin, require_reader

router = APIRouter(tags=["indexer"])

GAUGES = {"files": "indexed kb files", "queue": "changed files waiting to be indexed"}


def indexer_status(request: Request) -> dict[str, Any]:
    """The watcher's status, or `running: false` when this process does not watch."""
    watcher = getattr(request.app.state, "watcher", None)
    return watcher.status() if watcher is not None else {"running": False, "collections": {}}


@router.get("/v1/indexer/status", dependencies=[Depends(require_admin)])
def status(request: Request) -> dict[str, Any]:
    """Per collection: files known, queue length, last sync, last error, bad files, counters."""
    return indexer_status(request)


@router.get("/metrics", dependencies=[Depends(require_reader)], response_class=PlainTextResponse)
def metrics(request: Request) -> str:
    """Indexer counters and gauges in the Prometheus text exposition format."""
    return prometheus_text(indexer_status(request))


def prometheus_text(status: dict[str, Any]) -> str:
    """Counters (`rag_indexer_<name>_total`) and gauges per collection, as Prometheus scrapes them."""
    rows = status["collections"]
    lines = [
        "# HELP rag_indexer_up 1 when the folder indexer runs in this process.",
        "# TYPE rag_indexer_up gauge",
        f"rag_indexer_up {int(bool(status['running']))}",
    ]
    for gauge, help_text in GAUGES.items():
        lines += [f"# HELP rag_indexer_{gauge} {help_text}", f"# TYPE rag_indexer_{gauge} gauge"]
        lines += [f'rag_indexer_{gauge}{{collection="{n}"}} {r[gauge]}' for n, r in rows.items()]
    names = sorted({name for row in rows.values() for name in row["counters"]})
    for name in names:
        lines.append(f"# TYPE rag_indexer_{name}_total counter")
        lines += [
            f'rag_indexer_{name}_total{{collection="{n}"}} {r["counters"].get(name, 0)}'
            for n, r in rows.items()
        ]
    return "\n".join(lines) + "\n"
