"""Liveness (/health) and readiness (/ready: store open, disk room, collections usable)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from rag_api.access.grant import EVERY
from rag_api.errors import NotReady
from rag_api.http.auth import PrincipalDep
from rag_api.http.deps import OpenedDep
from rag_api.indexing.kb import folder_problem
from rag_api.ops.server import readiness
from rag_api.ops.server.readiness import Ready

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """The process is up (answered on the event loop: it never waits for a worker thread)."""
    return {"status": "ok"}


@router.get("/ready", response_model=Ready, response_model_exclude_unset=True)
def ready(hub: OpenedDep, principal: PrincipalDep) -> dict[str, Any]:
    """200 when the store answers, has disk room, and every enabled collection can be read and
    written with its embedder loaded; 503 naming what is not. Details (paths, the store's
    location, messages) only for a key that reads every collection when keys are set; a scoped
    key sees only its own collections' names."""
    if hub is None:
        raise NotReady("starting: the store and models are not open yet")
    detailed = principal is not None and principal.may("read", EVERY)
    names = [n for n in sorted(hub.collections) if principal is None or principal.may("read", n)]
    found = readiness.problems(hub)
    if found:
        raise NotReady(f"not ready: {readiness.summary(found, detailed)}")
    # a missing kb folder is reported, not a reason to stop serving what the store holds
    kb_folders = {
        name: problem if detailed else problem.partition(":")[0]
        for name in names
        if hub.settings.writes  # a reader never reads the kb folders: the writer does
        and (kb := hub.collections[name].kb_path) is not None
        and (problem := folder_problem(kb))
    }
    # each LLM server's circuit (closed / open / half-open): answers are extractive while open
    circuits = {name: hub.generators.breaker(hub.collections[name].cfg.llm) for name in names}
    llm = {name: breaker.state for name, breaker in sorted(circuits.items()) if breaker}
    rerankers = {
        n: r for n in names if (r := hub.rerankers.describe(hub.collections[n].cfg.rerank))
    }
    # each rerank server's circuit: searches keep their retrieval order while open
    rerank = {n: r["circuit"]["state"] for n, r in rerankers.items() if "circuit" in r}
    if not detailed:
        return {"status": "ready", "role": hub.settings.role, "kb_folders": kb_folders,
                "llm": llm, "rerank": rerank}  # fmt: skip
    body: dict[str, Any] = {
        "status": "ready",
        "role": hub.settings.role,
        "store": hub.store.location,
        "collections": names,
        "kb_folders": kb_folders,
        "llm": llm,
        "rerank": rerank,
        "embedders": {
            n: hub.embedders.where(hub.collections[n].cfg.embedder).view() for n in names
        },
        "rerankers": rerankers,
    }
    disk = getattr(hub.store, "disk", None)
    if disk is not None:
        body["disk"] = disk.status()
    return body
