"""The payload indexes a new collection gets (rag_api.store.base): `seq` and `chunk_index`, which no
vector search filters on, without HNSW links; every other index with the engine's default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from rag_api.store import PointData, Selector, Store, open_store
from rag_api.store.base import PAYLOAD_INDEXES
from rag_api.store.edge import EdgeStore
from rag_api.store.remote import RemoteStore
from rag_api.store.types import DENSE, SPARSE


def index_params(store: Store, physical: str, sent: dict[str, Any]) -> dict[str, Any]:
    """field -> the index params the engine reports (None: the default of its kind). The
    in-memory stand-in keeps no indexes: there, what the store asked the client for."""
    if isinstance(store, EdgeStore):
        schema = store.shards.call(physical, "info").payload_schema
        return {field: index.params for field, index in schema.items()}
    assert isinstance(store, RemoteStore)
    schema = store._client.get_collection(physical).payload_schema or {}
    reported = {field: index.params for field, index in schema.items()}
    return reported or sent


@pytest.fixture
def store(engine: str, make_settings, monkeypatch) -> Any:
    opened = open_store(make_settings(Path("unused.yaml"), engine))
    sent: dict[str, Any] = {}
    if isinstance(opened, RemoteStore):
        create = opened._client.create_payload_index

        def recording(collection: str, field: str, schema: Any, **kwargs: Any) -> Any:
            sent[field] = None if isinstance(schema, str) else schema  # a bare kind: defaults
            return create(collection, field, schema, **kwargs)

        monkeypatch.setattr(opened._client, "create_payload_index", recording)
    yield opened, sent
    opened.close()


def test_seq_and_chunk_index_are_indexed_without_hnsw_links(store) -> None:
    opened, sent = store
    physical = opened.ensure("docs", 4).physical
    assert opened.payload_indexes(physical) in ({}, PAYLOAD_INDEXES)  # in-memory: none
    params = index_params(opened, physical, sent)
    assert set(params) == set(PAYLOAD_INDEXES)
    for field, lookup, range_ in (("seq", True, False), ("chunk_index", False, True)):
        assert params[field] is not None, field
        assert params[field].enable_hnsw is False, field
        assert (params[field].lookup, params[field].range) == (lookup, range_), field
    # searches filter on quality and type: their indexes keep the engine's links
    for field in ("quality", "type", "source"):
        assert params[field] is None or params[field].enable_hnsw is not False, field


def test_unlinked_indexes_still_answer_their_lookups(store) -> None:
    opened, _ = store
    physical = opened.ensure("docs", 4).physical
    points = [
        PointData(
            f"00000000-0000-0000-0000-00000000000{i}",
            [1.0, 0.1 * i, 0.0, 0.0],
            {"text": f"t{i}", "source": "a.md", "chunk_index": i, "seq": 10 + i},
        )
        for i in range(5)
    ]
    opened.upsert(physical, points)
    opened.optimize(physical)
    assert opened.count(physical, Selector(seq=12)) == 1
    assert opened.count(physical, Selector(chunk_index_from=3)) == 2


def test_an_existing_collection_keeps_its_indexes(tmp_path: Path) -> None:
    """A shard whose `seq` index was created with the engine's defaults (links included) is not
    re-indexed: it reports the same kind, so nothing is missing to create."""
    root = tmp_path / "qdrant"
    root.mkdir()
    old = qe.EdgeShard.create(
        str(root / "docs__v1"),
        qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=4, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        ),
    )
    old.update(qe.UpdateOperation.create_field_index("seq", qe.PayloadSchemaType.Integer))
    old.close()
    store = EdgeStore(root)
    try:
        assert store.payload_indexes("docs__v1")["seq"] == "integer"
        created = store.ensure_payload_indexes("docs__v1", PAYLOAD_INDEXES)
        assert "seq" not in created
        assert store.shards.call("docs__v1", "info").payload_schema["seq"].params is None
    finally:
        store.close()
