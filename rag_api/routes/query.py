"""POST /query/{collection}: retrieve, then answer (or only retrieve, with generate=false)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from rag_api.auth import require_reader
from rag_api.generation_pool import GenerationPool
from rag_api.query import QueryBody, run_query
from rag_api.routes.deps import HubDep, get_generation
from rag_api.routes.schemas import QueryAnswer

router = APIRouter(tags=["query"], dependencies=[Depends(require_reader)])


@router.post("/query/{collection}", response_model=QueryAnswer, response_model_exclude_unset=True)
async def query(
    collection: str,
    body: QueryBody,
    hub: HubDep,
    generation: GenerationPool = Depends(get_generation),
) -> dict[str, Any]:
    """Answer a question from one collection, with the passages it is grounded in."""
    if body.generate:
        return await generation.run(run_query, hub, collection, body)
    return await run_in_threadpool(run_query, hub, collection, body)
