"""The label filters (Selector.types, Selector.min_quality) on both engines: labelled points are
kept or left out by their type and quality, unlabelled ones always pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.payload import CHUNK_TYPES, point_id
from rag_api.store import PointData, SearchSpec, Selector, Store, open_store

# source -> (type, quality); None: written without labels (before them, or by another tool)
POINTS = {
    "prose.md": ("prose", 0.9),
    "table.md": ("table", 0.7),
    "footer.md": ("boilerplate", 0.8),
    "garbage.md": ("prose", 0.1),
    "edge.md": ("list", 0.3),
    "old.md": None,
}
DEFAULT_TYPES = tuple(t for t in CHUNK_TYPES if t != "boilerplate")


@pytest.fixture
def store(engine: str, make_settings) -> Store:
    opened = open_store(make_settings(Path("unused.yaml"), engine))
    yield opened
    opened.close()


def fill(store: Store) -> str:
    info = store.ensure("docs", 4)
    encoder = sparse_encoder("en")
    points = []
    for n, (source, labels) in enumerate(POINTS.items()):
        text = f"refund policy passage number {n}"
        payload = {"text": text, "source": source, "chunk_index": 0, "metadata": {}}
        if labels is not None:
            payload |= {"type": labels[0], "quality": labels[1], "quality_reasons": []}
        dense = [1.0, 0.1 * n, 0.0, 0.0]
        points.append(
            PointData(point_id("docs", source, 0), dense, payload, encoder.document(text))
        )
    store.upsert(info.physical, points)
    return info.physical


def sources(store: Store, physical: str, selector: Selector) -> set[str]:
    records, _ = store.scroll(physical, selector, 100)
    return {r.payload["source"] for r in records}


def test_types_allowlist_keeps_unlabelled_points(store: Store) -> None:
    physical = fill(store)
    everything = set(POINTS)
    assert sources(store, physical, Selector(types=DEFAULT_TYPES)) == everything - {"footer.md"}
    assert sources(store, physical, Selector(types=("boilerplate",))) == {"footer.md", "old.md"}
    assert sources(store, physical, Selector(types=CHUNK_TYPES)) == everything
    assert store.count(physical, Selector(types=("table", "list"))) == 3  # table, edge, old


def test_min_quality_leaves_out_only_labelled_points_below_it(store: Store) -> None:
    physical = fill(store)
    kept = sources(store, physical, Selector(min_quality=0.3))
    assert kept == set(POINTS) - {"garbage.md"}  # 0.3 itself is not below 0.3
    assert sources(store, physical, Selector(min_quality=0.75)) == {
        "prose.md",
        "footer.md",
        "old.md",
    }
    assert store.count(physical, Selector(min_quality=0.0)) == len(POINTS)


def test_both_filters_and_others_combine_in_a_search(store: Store) -> None:
    physical = fill(store)
    selector = Selector(types=DEFAULT_TYPES, min_quality=0.3, source_prefix="")
    spec = SearchSpec(
        limit=10,
        dense=[1.0, 0.0, 0.0, 0.0],
        sparse=sparse_encoder("en").query("refund"),
        selector=selector,
    )
    hits = store.search(physical, spec, store.info("docs"))
    assert {h.payload["source"] for h in hits} == {"prose.md", "table.md", "edge.md", "old.md"}


def test_no_clause_when_nothing_is_left_out() -> None:
    assert Selector(types=CHUNK_TYPES, min_quality=0.0).conditions() == []
    assert Selector(types=CHUNK_TYPES, min_quality=0.0).is_everything
    (allow, floor) = Selector(types=DEFAULT_TYPES, min_quality=0.3).conditions()
    assert (allow.kind, allow.value, allow.negated) == ("any", ["boilerplate"], True)
    assert (floor.kind, floor.lt, floor.negated) == ("range", 0.3, True)
