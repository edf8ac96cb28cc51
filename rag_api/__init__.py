"""RAG Hub: knowledge bases from folders of documents, answered from Qdrant."""

from __future__ import annotations


def version() -> str:
    """The installed rag-hub's version, from its package metadata (pyproject.toml's `version`):
    what `rag-hub --version` prints and the OpenAPI document carries."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("rag-hub")
    except PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"
