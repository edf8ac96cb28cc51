"""POST /v1/collections/{collection}/eval: `rag-hub eval` for the console and scripts (reader key).

One request runs at most RAG_EVAL_MAX_S (413 EVAL_TOO_LONG past it, naming the limit); the
work runs on a worker thread, like a retrieval-only query.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from rag_api.evaluation.request import EvalBody, run_eval
from rag_api.http.auth import require_reader
from rag_api.http.deps import HubDep, SettingsDep

router = APIRouter(tags=["evaluation"], dependencies=[Depends(require_reader)])


@router.post("/v1/collections/{collection}/eval")
async def evaluate(
    collection: str, body: EvalBody, hub: HubDep, settings: SettingsDep
) -> dict[str, Any]:
    """The collection's retrieval measured on the given questions (or drafted ones): a row per
    mode and fusion, and with `tune` the best settings and whether their gain is beyond noise."""
    return await run_in_threadpool(run_eval, hub, collection, body, settings.eval_max_s)
