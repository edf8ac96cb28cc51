"""POST /query/{collection}: retrieve, then answer (or only retrieve, with generate=false)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from rag_api.auth import require_reader
from rag_api.hub import Hub
from rag_api.query import QueryBody, run_query
from rag_api.routes.deps import get_hub

router = APIRouter(tags=["query"], dependencies=[Depends(require_reader)])


@router.post("/query/{collection}")
def query(collection: str, body: QueryBody, hub: Hub = Depends(get_hub)) -> dict[str, Any]:
    """Answer a question from one collection, with the passages it is grounded in."""
    return run_query(hub, collection, body)
