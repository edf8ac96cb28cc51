"""Readiness: the store answers, its disk has room for writes, and every enabled collection can be
read and written with its embedder loaded. /ready and `rag-hub check` report from here."""

from __future__ import annotations

from typing import Any

from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.payload import SOURCE
from rag_api.schema import Answer
from rag_api.store import Selector


def problems(hub: Catalog) -> dict[str, RagError]:
    """What keeps the hub from serving reads and writes: "store", "disk" or a collection -> why."""
    try:
        hub.store.physical_collections()
    except RagError as exc:
        return {"store": exc}  # nothing else can be asked
    found: dict[str, RagError] = {}
    low = disk_problem(hub)
    if low is not None:
        found["disk"] = low
    found.update(hub.load_models())
    for name, collection in sorted(hub.collections.items()):
        if not collection.cfg.enabled or name in found:
            continue
        try:
            # refuses a dimension or model mismatch, and the engine must read its points
            if collection.searchable() is not None:
                collection.records(Selector(), [SOURCE], limit=1)
        except RagError as exc:
            found[name] = exc
    return found


def disk_problem(hub: Catalog) -> RagError | None:
    """Why the embedded store refuses writes for lack of disk space (None: it has room, or the
    store is a server whose disk is not ours)."""
    disk = getattr(hub.store, "disk", None)
    return disk.problem() if disk is not None else None


def summary(found: dict[str, RagError], detailed: bool) -> str:
    """One line: each subject and its error's message, or only its code in words (no paths or
    URLs for a caller without the reader key)."""
    return "; ".join(
        f"{name}: {exc.message if detailed else exc.code.lower().replace('_', ' ')}"
        for name, exc in sorted(found.items())
    )


class Ready(Answer):
    """GET /ready; `store`, `collections` and `disk` only for a caller with the reader key."""

    status: str
    role: str  # all, writer or reader (docs/scaling.md)
    kb_folders: dict[str, str]  # collection -> why its kb folder cannot be read (still served)
    llm: dict[str, str]  # collection -> its LLM server's circuit: closed, open or half-open
    rerank: dict[str, str] = {}  # collection -> its rerank server's circuit (provider http)
    store: str | None = None
    collections: list[str] | None = None
    disk: dict[str, Any] | None = None  # free space of the store's disk, when it is watched
    # collection -> its embedder's device, precision and query device
    embedders: dict[str, dict[str, str | None]] | None = None
    rerankers: dict[str, dict[str, Any]] | None = None  # collection -> as in /v1/rag/status
