"""Liveness (/health) and readiness (/ready: store open, embedders loaded)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rag_api.errors import NotReady, RagError
from rag_api.kb import folder_problem

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
    # a missing kb folder is reported, not a reason to stop serving what the store holds
    kb_folders = {
        name: problem
        for name, collection in sorted(hub.collections.items())
        if collection.kb_path is not None and (problem := folder_problem(collection.kb_path))
    }
    return {
        "status": "ready",
        "store": hub.store.location,
        "collections": sorted(hub.collections),
        "kb_folders": kb_folders,
    }
