"""GET /collections: what is configured and what the store holds for each."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from rag_api.http.answers import CollectionList
from rag_api.http.auth import require_reader
from rag_api.http.deps import HubDep

router = APIRouter(tags=["collections"], dependencies=[Depends(require_reader)])


@router.get("/collections", response_model=CollectionList, response_model_exclude_unset=True)
def list_collections(hub: HubDep) -> dict[str, Any]:
    """Every configured collection: its settings and what the store holds."""
    return {
        "default_collection": hub.default_visible(),
        "collections": [hub.describe(name) for name in hub.visible()],
    }
