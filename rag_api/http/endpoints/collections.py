"""GET /collections: what is configured and what the store holds for each."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from rag_api.catalog import CollectionList
from rag_api.http.auth import require_reader
from rag_api.http.deps import HubDep
from rag_api.http.model_response import model_response

router = APIRouter(tags=["collections"], dependencies=[Depends(require_reader)])


@router.get("/collections", response_model=CollectionList, response_model_exclude_unset=True)
def list_collections(hub: HubDep) -> Response:
    """Every configured collection: its settings and what the store holds."""
    return model_response(hub.listing())
