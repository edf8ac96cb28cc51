"""What the backup tests share: a collection with kb files, API chunks (dynamic ones, metadata,
several versions of a document), and the whole state of a collection to compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.points.collection import Collection
from tests.support.migration_world import QUESTIONS, fill
from tests.support.writes import replace_source


def populate(collection: Collection, kb: Path) -> None:
    """kb files + API chunks (fill), a dynamic note with metadata, a document written 3 times."""
    fill(collection, kb)
    note = {"origin": "api", "persist": True, "dynamic": True}
    chunks = [
        Chunk(f"CRM note {i}: the customer called about invoice {100 + i}.", "crm/acme", i,
              {"customer": "acme", "tier": 2, "vip": True})
        for i in range(3)
    ]  # fmt: skip
    replace_source(collection, "crm/acme", chunks, note)
    for version in range(3):
        text = f"Opening hours, version {version}: from {8 + version} to {17 + version}."
        versioned = [Chunk(text, "api/hours", 0), Chunk(f"Holidays v{version}.", "api/hours", 1)]
        replace_source(collection, "api/hours", versioned, {"origin": "api", "persist": True})


def state(hub: Hub, name: str) -> dict[str, tuple[list[float], Any, dict[str, Any]]]:
    """Every point of a collection: id -> (dense vector, BM25 vector, payload)."""
    physical = hub.store.alias_target(name)
    assert physical is not None
    points: dict[str, tuple[list[float], Any, dict[str, Any]]] = {}
    for page in hub.store.export(physical, 128):
        for p in page:
            sparse = None if p.sparse is None else (list(p.sparse.indices), list(p.sparse.values))
            points[p.id] = (list(p.dense), sparse, p.payload)
    return points


def rankings(hub: Hub, name: str = "docs") -> list[list[tuple[str, int, float]]]:
    """What each sample question retrieves, in order, with scores (hybrid, the default mode)."""
    rows = []
    for question in [*QUESTIONS, "invoice customer acme", "opening hours"]:
        response = run_query(hub, name, QueryBody(query=question, generate=False))
        rows.append([(s.source, s.chunk_index, round(s.score, 5)) for s in response.sources])
    return rows
