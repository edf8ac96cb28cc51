"""A new collection's dense HNSW graph (rag_api.store.search_plan: m 16, ef_construct 200) as each engine
records it, and an existing collection keeping the graph it was created with."""

from __future__ import annotations

import json
from pathlib import Path

import qdrant_edge as qe

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.store import PointData, Selector, Store, open_store
from rag_api.store.edge import EdgeStore
from rag_api.store.remote import RemoteStore
from rag_api.store.types import DENSE, SPARSE


def graph_of(store: Store, physical: str) -> tuple[int, int]:
    """(m, ef_construct) of the dense vector, read back from the engine itself."""
    if isinstance(store, EdgeStore):
        config = json.loads((store.root / physical / "edge_config.json").read_text())
        hnsw = config["vectors"][DENSE]["hnsw_config"]
        return hnsw["m"], hnsw["ef_construct"]
    assert isinstance(store, RemoteStore)
    vectors = store._client.get_collection(physical).config.params.vectors
    hnsw = vectors[DENSE].hnsw_config
    return hnsw.m, hnsw.ef_construct


def test_a_new_collection_is_built_with_the_hubs_graph(engine: str, make_settings) -> None:
    store = open_store(make_settings(Path("unused.yaml"), engine))
    try:
        info = store.ensure("docs", 4)
        assert graph_of(store, info.physical) == (16, 200)
    finally:
        store.close()


def test_an_existing_collection_keeps_its_graph(tmp_path: Path) -> None:
    """A shard created before this graph (no graph of its own: the engine's default, m 16 /
    ef_construct 100) is not migrated by opening, writing or optimizing it: its graph stays as it
    was, and only a new collection gets the new graph."""
    root = tmp_path / "qdrant"
    root.mkdir()
    old = qe.EdgeShard.create(
        str(root / "docs__v1"),
        qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=4, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        ),
    )
    old.close()
    created = json.loads((root / "docs__v1" / "edge_config.json").read_text())
    store = EdgeStore(root)
    try:
        encoder = sparse_encoder("en")
        points = [
            PointData(
                f"00000000-0000-0000-0000-00000000000{i}",
                [1.0, 0.1 * i, 0.0, 0.0],
                {"text": f"chunk {i}", "source": "a.md", "chunk_index": i},
                encoder.document(f"chunk {i}"),
            )
            for i in range(3)
        ]
        store.upsert("docs__v1", points)
        store.optimize("docs__v1")
        assert store.count("docs__v1", Selector()) == 3
        # the engine adds its storage defaults on load; the vectors and the graph stay as created
        config = json.loads((root / "docs__v1" / "edge_config.json").read_text())
        assert config["vectors"] == created["vectors"]
        assert "hnsw_config" not in config["vectors"][DENSE]
        assert config.get("hnsw_config") == created.get("hnsw_config")
        store.ensure("fresh", 4)
        assert graph_of(store, "fresh__v1") == (16, 200)
    finally:
        store.close()
