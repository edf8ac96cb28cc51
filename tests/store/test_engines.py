"""The store interface, the same tests on the embedded engine and on qdrant-client (server path)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.errors import StoreLocked, StoreUnavailable
from rag_api.payload import extract_text, point_id
from rag_api.settings import Settings
from rag_api.store import (
    PointData,
    SearchSpec,
    Selector,
    Store,
    open_store,
    search_plan,
    search_sides,
)
from rag_api.store.edge import EdgeStore
from rag_api.store.search_plan import cosine
from tests.conftest import REPO

TEXTS = {
    "faq.md": ["Refunds are possible within 30 days of purchase.", "Support answers weekdays."],
    "crm/cliente_456": ["Javier García prefiere llamadas por la mañana."],
    "crm/cliente_789": ["Cliente 789 pidió factura rectificativa."],
    "pedidos/8942": ["Pedido 8942 enviado con tracking 1Z999AA10123456784."],
}


def vector(i: int, dim: int = 4) -> list[float]:
    return [1.0 if j == i % dim else 0.1 for j in range(dim)]


@pytest.fixture
def store(engine: str, make_settings) -> Store:
    opened = open_store(make_settings(Path("unused.yaml"), engine))
    yield opened
    opened.close()


def fill(store: Store, name: str = "docs") -> str:
    info = store.ensure(name, 4)
    encoder = sparse_encoder("en")
    points, n = [], 0
    for source, chunks in TEXTS.items():
        for index, text in enumerate(chunks):
            payload = {
                "text": text,
                "source": source,
                "chunk_index": index,
                "origin": "api" if source.startswith(("crm", "pedidos")) else "file",
                "metadata": {"categoria": "crm" if source.startswith("crm") else "otro", "n": n},
            }
            points.append(
                PointData(point_id(name, source, index), vector(n), payload, encoder.document(text))
            )
            n += 1
    store.upsert(info.physical, points)
    return info.physical


def test_ensure_creates_physical_collection_behind_alias(store: Store) -> None:
    info = store.ensure("docs", 4)
    assert (info.name, info.physical, info.dim, info.points) == ("docs", "docs__v1", 4, 0)
    assert info.has_sparse
    assert store.alias_target("docs") == "docs__v1"
    assert store.aliases() == {"docs": "docs__v1"}
    assert store.ensure("docs", 4).physical == "docs__v1"  # idempotent


def test_points_counts_sources_and_selectors(store: Store) -> None:
    physical = fill(store)
    assert store.count(physical) == 5
    assert store.sources(physical) == {
        "faq.md": 2,
        "crm/cliente_456": 1,
        "crm/cliente_789": 1,
        "pedidos/8942": 1,
    }
    assert store.count(physical, Selector(source_prefix="crm/")) == 2
    assert store.count(physical, Selector(sources=("faq.md", "pedidos/8942"))) == 3
    assert store.count(physical, Selector(sources=())) == 0
    assert store.count(physical, Selector(metadata={"categoria": "crm"})) == 2
    assert store.count(physical, Selector(metadata={"n": 4})) == 1
    assert store.count(physical, Selector(origin="api", source_prefix="crm/cliente_4")) == 1
    assert store.count(physical, Selector(chunk_index_from=1)) == 1


def test_boolean_and_seq_selectors(store: Store) -> None:
    physical = store.ensure("docs", 4).physical
    flags = [(True, True), (False, True), (False, False)]
    store.upsert(
        physical,
        [
            PointData(
                point_id("docs", "api", n),
                vector(n),
                {"source": "api", "persist": persist, "seq": n, "metadata": {"vip": vip}},
            )
            for n, (persist, vip) in enumerate(flags)
        ],
    )
    assert store.count(physical, Selector(persist=True)) == 1
    assert store.count(physical, Selector(persist=False)) == 2
    assert store.count(physical, Selector(metadata={"vip": False})) == 1
    assert store.count(physical, Selector(persist=False, metadata={"vip": True})) == 1
    assert [r.payload["seq"] for r in store.scroll(physical, Selector(seq=2))[0]] == [2]


def test_scroll_pages_through_everything(store: Store) -> None:
    physical = fill(store)
    seen, offset = [], None
    while True:
        records, offset = store.scroll(physical, limit=2, offset=offset, fields=["source"])
        seen += records
        if offset is None:
            break
    assert len(seen) == 5 and len({r.id for r in seen}) == 5
    assert all(set(r.payload) == {"source"} for r in seen)
    assert len(list(store.iter_records(physical, page=2))) == 5


def test_retrieve_with_vectors_and_delete(store: Store) -> None:
    physical = fill(store)
    first = point_id("docs", "faq.md", 0)
    (record,) = store.retrieve(
        physical, [first, "00000000-0000-0000-0000-000000000000"], with_dense=True
    )
    assert record.payload["source"] == "faq.md"
    assert len(record.dense) == 4 and abs(sum(x * x for x in record.dense) - 1) < 1e-5  # normalised
    store.delete(physical, Selector(source_prefix="crm/"))
    assert store.count(physical) == 3
    store.delete(physical, Selector(ids=(first,)))
    assert store.count(physical) == 2
    store.delete(physical, Selector(sources=()))  # an empty allowlist selects nothing
    assert store.count(physical) == 2


def test_dense_sparse_and_hybrid_search(store: Store) -> None:
    physical = fill(store)
    info = store.info("docs")
    encoder = sparse_encoder("en")
    dense = store.search(physical, SearchSpec(limit=3, dense=vector(3)), info)
    assert dense[0].payload["source"] == "crm/cliente_789"
    assert [h.dense_rank for h in dense] == [1, 2, 3] and dense[0].sparse_rank is None
    sparse = store.search(
        physical, SearchSpec(limit=3, sparse=encoder.query("tracking pedido 8942")), info
    )
    assert sparse[0].payload["source"] == "pedidos/8942" and sparse[0].sparse_rank == 1
    spec = SearchSpec(limit=5, dense=vector(0), sparse=encoder.query("tracking 8942"), rrf_k=60)
    hybrid = store.search(physical, spec, info)
    by_source = {h.payload["source"]: h for h in hybrid}
    both = by_source["pedidos/8942"]  # sparse rank 1, and somewhere in the dense list
    assert both.sparse_rank == 1 and both.dense_rank is not None
    assert both.score == pytest.approx(1 / (60 + 1) + 1 / (60 + both.dense_rank))
    assert all(h.dense_score is not None for h in hybrid)  # sparse-only hits get their cosine too
    filtered = store.search(
        physical,
        SearchSpec(limit=5, dense=vector(0), selector=Selector(source_prefix="crm/")),
        info,
    )
    assert {h.payload["source"] for h in filtered} == {"crm/cliente_456", "crm/cliente_789"}


@pytest.mark.parametrize("plan", ["dense", "sparse", "hybrid"])
def test_a_search_reads_only_the_payload_fields_asked(store: Store, plan: str) -> None:
    """`fields` reads those payload fields of each hit (what source evidence ranks all candidates
    by), nothing else; the hits, their scores, ranks and vectors are those of a full read."""
    physical = fill(store)
    info = store.info("docs")
    query = {
        "dense": vector(0),
        "sparse": sparse_encoder("en").query("refunds support cliente pedido"),
    }
    spec = SearchSpec(
        limit=5,
        dense=query["dense"] if plan != "sparse" else None,
        sparse=query["sparse"] if plan != "dense" else None,
        candidates=2,  # hybrid: some hits are outside the dense candidates
        with_dense=True,
    )
    full = store.search(physical, spec, info)
    light = store.search(physical, replace(spec, fields=("source", "file_path")), info)
    assert len(full) >= 3
    assert [h.payload for h in light] == [{"source": h.payload["source"]} for h in full]
    if plan != "sparse":  # every hit's cosine, the engine's for those outside the dense list
        assert any(h.dense_rank is None for h in full) or plan == "dense"
        for hit in full:
            assert hit.dense_score == pytest.approx(cosine(query["dense"], hit.dense), rel=1e-5)
    for hit in full:
        hit.payload = {"source": hit.payload["source"]}
    assert light == full


def test_store_plans_the_search_once(store: Store) -> None:
    """A side with nothing to search (a BM25 query of stop words, a collection without BM25
    vectors) leaves the other alone; a selector that selects nothing answers nothing."""
    physical = fill(store)
    info = store.info("docs")
    stop_words = sparse_encoder("en").query("the of and")
    assert not stop_words.indices
    dense_only = store.search(physical, SearchSpec(limit=3, dense=vector(3)), info)
    spec = SearchSpec(limit=3, dense=vector(3), sparse=stop_words)
    assert search_plan(spec, info) == "dense"
    assert store.search(physical, spec, info) == dense_only
    assert store.search(physical, SearchSpec(limit=3, sparse=stop_words), info) == []
    without_bm25 = replace(info, sparse_name=None)
    assert search_sides("hybrid", without_bm25) == search_sides("sparse", without_bm25)
    assert search_sides("sparse", without_bm25) == (True, False)
    nothing = replace(spec, selector=Selector(ids=()))
    assert store.search(physical, nothing, info) == []
    assert store.facet(physical, "source", Selector(files=())) == {}
    assert store.scroll(physical, Selector(sources=())) == ([], None)


def test_alias_swap_and_drop(store: Store) -> None:
    fill(store)
    store.create_physical("docs__v2", 8)
    store.set_alias("docs", "docs__v2")
    info = store.info("docs")
    assert (info.physical, info.dim, info.points) == ("docs__v2", 8, 0)
    assert set(store.physical_collections()) == {"docs__v1", "docs__v2"}
    store.drop_physical("docs__v1")
    assert store.physical_collections() == ["docs__v2"]
    store.remove_alias("docs")
    assert store.alias_target("docs") is None


def test_foreign_payload_text() -> None:
    node = {"id_": "x", "text": "LlamaIndex keeps the text here", "metadata": {}}
    assert extract_text({"_node_content": json.dumps(node)}) == "LlamaIndex keeps the text here"
    assert extract_text({"page_content": "LangChain"}) == "LangChain"
    assert extract_text({"text": "", "content": "fallback"}) == "fallback"
    assert extract_text({"_node_content": "not json"}) == ""


def test_point_ids_are_deterministic() -> None:
    assert point_id("docs", "a.md", 0) == point_id("docs", "a.md", 0)
    assert (
        len(
            {point_id("docs", "a.md", 0), point_id("docs", "a.md", 1), point_id("other", "a.md", 0)}
        )
        == 3
    )


def test_embedded_store_persists_and_is_owned_by_one_process(tmp_path: Path) -> None:
    root = tmp_path / "qdrant"
    store = EdgeStore(root)
    physical = fill(store)
    with pytest.raises(StoreLocked, match="in use by pid"):
        EdgeStore(root)
    probe = f"import sys; sys.path.insert(0, {str(REPO)!r})\nfrom rag_api.store.edge import EdgeStore\nEdgeStore({str(root)!r})"
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "StoreLocked" in other.stderr and "HTTP admin API" in other.stderr
    store.close()
    reopened = EdgeStore(root)
    assert reopened.alias_target("docs") == physical and reopened.count(physical) == 5
    assert json.loads((root / "aliases.json").read_text()) == {"docs": "docs__v1"}
    reopened.close()


def test_unreachable_server_is_a_store_outage() -> None:
    store = open_store(Settings(qdrant_url="http://127.0.0.1:9"))
    with pytest.raises(StoreUnavailable, match=r"Qdrant at http://127\.0\.0\.1:9 unavailable"):
        store.physical_collections()
