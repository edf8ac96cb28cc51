"""Liveness (/health) and readiness (/ready: store open, embedders loaded)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rag_api.errors import NotReady, RagError

router = APIRouter(tags=["health"])


@router.get("/health")
def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/ready")
def ready(request: Request) -> dict:
    """200 when the store answers and every enabled collection's embedder is loaded; 503 naming why not."""
    hub = getattr(request.app.state, "hub", None)
    if hub is None:
        raise NotReady("starting: the store and models are not open yet")
    try:
        hub.store.physical_collections()
    except RagError as exc:
        raise NotReady(f"store: {exc.message}") from exc
    problems = hub.load_models()
    if problems:
        raise NotReady("; ".join(f"{name}: {reason}" for name, reason in sorted(problems.items())))
    return {"status": "ready", "store": hub.store.location, "collections": sorted(hub.collections)}
