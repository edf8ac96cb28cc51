"""GET /collections: what is configured and what the store holds for each."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from rag_api.auth import require_reader
from rag_api.errors import StoreUnavailable
from rag_api.hub import Hub
from rag_api.routes.deps import HubDep

router = APIRouter(tags=["collections"], dependencies=[Depends(require_reader)])


def describe(hub: Hub, name: str) -> dict:
    """A collection's configuration and its live state in the store."""
    collection = hub.collections[name]
    cfg = collection.cfg
    try:
        info, error = collection.info(refresh=True), None
    except StoreUnavailable as exc:  # one unreadable collection does not hide the others
        info, error = None, {"code": exc.code, "message": exc.message}
    return {
        "name": name,
        "description": cfg.description,
        "enabled": cfg.enabled,
        "language": cfg.language,
        "kb": str(collection.kb_path) if collection.kb_path else None,
        "embedder": cfg.embedder.id,
        "dim": cfg.embedder.dim,
        "mode": cfg.retrieval.mode,
        "llm": cfg.llm.provider
        if cfg.llm.provider == "extractive"
        else f"{cfg.llm.provider}:{cfg.llm.model}",
        "physical": info.physical if info else None,
        "points": info.points if info else 0,
        "hybrid": bool(info and info.has_sparse),
        **({"error": error} if error else {}),
    }


@router.get("/collections")
def list_collections(hub: HubDep) -> dict:
    return {
        "default_collection": hub.config.default_collection,
        "collections": [describe(hub, name) for name in hub.collections],
    }
