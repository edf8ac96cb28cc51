"""Dense vectors kept between benchmark runs, so an experiment on BM25, fusion or aggregation
re-runs only the store and the ranking: embedding is the expensive part on a shared 2-core box.

Keyed by what decides a vector: the embedder's identity and runtime (`<provider>:<model>`, torch |
onnx | onnx-int8, with the ONNX export recipe's version) and the hash of the exact text embedded (prefix included), so a new chunker
or titles setting simply misses the cache for the texts it changes. One .npy matrix and one key
list per embedder and kind (documents, queries) under the git-ignored .bench/vectors/.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_api.config import EmbedderConfig
from rag_api.embedding.onnx_model import EXPORT_VERSION
from rag_api.indexing.ingest import content_hash


def runtime_tag(embedder: EmbedderConfig) -> str:
    """torch, onnx-v<EXPORT_VERSION>, onnx-int8-v<EXPORT_VERSION>, or None (other providers)."""
    runtime = embedder.resolved_runtime
    return f"{runtime}-v{EXPORT_VERSION}" if runtime and runtime != "torch" else str(runtime)


class VectorCache:
    """hash -> vector of one embedder and one kind, loaded whole, saved after each fill."""

    def __init__(self, root: Path, embedder: EmbedderConfig, kind: str) -> None:
        name = re.sub(r"[^A-Za-z0-9.+-]+", "_", f"{embedder.id}-{runtime_tag(embedder)}")
        self.folder = root / name
        self.kind = kind
        self.vectors: dict[str, np.ndarray] = {}
        keys, matrix = self.folder / f"{kind}.keys", self.folder / f"{kind}.npy"
        if keys.is_file() and matrix.is_file():
            loaded = np.load(matrix)
            names = keys.read_text().split()
            if len(names) == len(loaded):
                self.vectors = dict(zip(names, loaded, strict=True))

    def fill(self, keys: Sequence[str], texts: Sequence[str], embed: Callable) -> None:
        """Embed (in one call) the texts whose key is missing, then save."""
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if not missing:
            return
        vectors = embed(list(missing.values()))
        self.vectors.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
        self.folder.mkdir(parents=True, exist_ok=True)
        names = list(self.vectors)
        np.save(self.folder / f"{self.kind}.npy", np.stack([self.vectors[k] for k in names]))
        (self.folder / f"{self.kind}.keys").write_text("\n".join(names))


def document_vectors(
    root: Path, embedder: EmbedderConfig, texts: Sequence[str], embed: Callable
) -> dict[str, np.ndarray]:
    """content_hash -> vector for every text (the key the ingest path reuses vectors by)."""
    cache = VectorCache(root, embedder, "documents")
    keys = [content_hash(t, embedder.document_prefix) for t in texts]
    cache.fill(keys, texts, embed)
    return cache.vectors


class CachedQueries:
    """An embedding router whose query vectors come from the cache (filled in one batch first);
    everything else is the real router's."""

    def __init__(self, router: Any, root: Path, embedder: EmbedderConfig, queries: list[str]):
        self.router = router
        self.cache = VectorCache(root, embedder, "queries")
        prefix = embedder.query_prefix
        keys = [content_hash(q, prefix) for q in queries]
        # embedded as a batch of documents without the document prefix = one query each
        self.cache.fill(keys, [prefix + q for q in queries], lambda t: self._embed(embedder, t))

    def _embed(self, embedder: EmbedderConfig, texts: list[str]) -> np.ndarray:
        return self.router.get(embedder).embed(texts, query=True)

    def query(self, cfg: EmbedderConfig, text: str) -> np.ndarray:
        hit = self.cache.vectors.get(content_hash(text, cfg.query_prefix))
        return hit if hit is not None else self.router.query(cfg, text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.router, name)
