"""Qdrant behind one interface: the embedded qdrant-edge engine or a server through qdrant-client;
the only package that imports a Qdrant package. Imports nothing of ours but the foundation."""

from __future__ import annotations

from rag_api.settings import Settings
from rag_api.store.base import Store, physical_name, version_of
from rag_api.store.search_plan import search_plan, search_sides
from rag_api.store.types import (
    CollectionInfo,
    Hit,
    Layout,
    PointData,
    Record,
    SearchSpec,
    Selector,
    SparseVec,
)

__all__ = [
    "CollectionInfo",
    "Hit",
    "Layout",
    "PointData",
    "Record",
    "SearchSpec",
    "Selector",
    "SparseVec",
    "Store",
    "open_store",
    "physical_name",
    "search_plan",
    "search_sides",
    "version_of",
]


def open_store(settings: Settings) -> Store:
    """The embedded engine under data/qdrant, or the Qdrant at RAG_QDRANT_URL (':memory:' in tests)."""
    if settings.qdrant_url is None:
        from rag_api.store.edge import EdgeStore

        return EdgeStore(settings.qdrant_path, settings.min_free_mb, settings.batch_nice)
    from rag_api.store.remote import RemoteStore

    return RemoteStore(settings.qdrant_url, api_key=settings.qdrant_api_key)
