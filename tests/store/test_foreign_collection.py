"""A collection written by another tool (LlamaIndex-style: unnamed dense vector, no BM25 vectors,
text inside `_node_content`) is searched dense-only, without error, and says `mode: dense`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import qdrant_edge as qe
from qdrant_client import models as m

from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.config import load_config
from rag_api.embedding.embedders import Embedders
from rag_api.hub import Hub
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config

TEXTS = {
    "refunds.pdf": "Refunds are granted within 30 days of purchase.",
    "travel.pdf": "Hotel nights are reimbursed up to 250 dollars.",
    "laptops.pdf": "Report a stolen laptop to security within two hours.",
}


def llamaindex_payload(file_name: str, text: str) -> dict:
    node = {"id_": file_name, "text": text, "metadata": {"file_name": file_name}}
    return {
        "_node_content": json.dumps(node),
        "_node_type": "TextNode",
        "file_name": file_name,
        "doc_id": file_name,
        "ref_doc_id": file_name,
    }


def foreign_points(settings: Settings) -> tuple[int, list[list[float]], list[dict]]:
    """The vectors and payloads LlamaIndex would write, embedded with the collection's model."""
    cfg = load_config(settings.config).collection("legacy").embedder
    vectors = Embedders(settings).documents(cfg, list(TEXTS.values())).tolist()
    return cfg.dim, vectors, [llamaindex_payload(name, text) for name, text in TEXTS.items()]


def write_with_edge(settings: Settings) -> None:
    """An unnamed-vector shard in the embedded store's folder, before the hub opens it."""
    dim, vectors, payloads = foreign_points(settings)
    params = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)
    shard = qe.EdgeShard.create(str(settings.qdrant_path / "legacy"), qe.EdgeConfig({"": params}))
    points = [
        qe.Point(i, {"": v}, p) for i, (v, p) in enumerate(zip(vectors, payloads, strict=True), 1)
    ]
    shard.update(qe.UpdateOperation.upsert_points(points))
    shard.close()


def write_with_client(hub: Hub) -> None:
    """The same through qdrant-client, into the in-memory server the hub's store talks to."""
    dim, vectors, payloads = foreign_points(hub.settings)
    client = hub.store._client
    vector_params = m.VectorParams(size=dim, distance=m.Distance.COSINE)
    client.create_collection("legacy", vectors_config=vector_params)
    points = [
        m.PointStruct(id=i, vector=v, payload=p)
        for i, (v, p) in enumerate(zip(vectors, payloads, strict=True), 1)
    ]
    client.upsert("legacy", points=points, wait=True)


@pytest.mark.parametrize("mode", ["hybrid", "sparse", "dense"])
def test_collection_without_sparse_vectors_is_searched_dense_only(
    engine, make_settings, open_hub, tmp_path: Path, mode: str
) -> None:
    config = write_config(tmp_path / "collections.yaml", {"legacy": hash_collection()})
    settings = make_settings(config, engine)
    if engine == "edge":
        write_with_edge(settings)
    hub = open_hub(settings)
    if engine == "memory":
        write_with_client(hub)
    collection = hub.collection("legacy")
    target = collection.searchable()
    assert target is not None and not target.info.has_sparse

    outcome = search(collection, SearchRequest("refunds within 30 days", mode=mode))
    assert outcome.mode == "dense"
    assert outcome.passages[0].source == "refunds.pdf"
    assert outcome.passages[0].text == TEXTS["refunds.pdf"]
    assert outcome.passages[0].dense_rank == 1 and outcome.passages[0].sparse_rank is None
    # source evidence reads the kept passages again by id: the engine's integer ids, not '1'
    evidence = collection.cfg.retrieval.model_copy(update={"source_evidence": 0.5})
    weighed = search(collection, SearchRequest("refunds", mode=mode, settings=evidence)).passages
    assert weighed and weighed[0].text == TEXTS["refunds.pdf"]
    diverse = search(collection, SearchRequest("refunds within 30 days", mode=mode, diversity=0.5))
    assert diverse.passages and all(p.vector is not None for p in diverse.passages)

    response = run_query(hub, "legacy", QueryBody(query="stolen laptop", mode=mode))
    assert response.mode == "dense"
    assert response.generator == "extractive"
    assert response.sources[0].source == "laptops.pdf"
