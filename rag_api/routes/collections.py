"""GET /collections: what is configured and what the store holds for each."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from rag_api.auth import require_reader
from rag_api.routes.deps import HubDep

router = APIRouter(tags=["collections"], dependencies=[Depends(require_reader)])


@router.get("/collections")
def list_collections(hub: HubDep) -> dict:
    return {
        "default_collection": hub.config.default_collection,
        "collections": [hub.describe(name) for name in hub.collections],
    }
