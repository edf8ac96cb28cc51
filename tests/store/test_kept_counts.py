"""Counts (`Store.count`, `Store.sources`: GET /v1/rag/status and /sources) are exact after every
kind of change. The embedded store keeps them until the shard changes: each is one engine call that
holds the interpreter (the chunks per source ~35 µs a source; a filter on an unindexed field reads
every payload), so a status poll would otherwise stall every request each time
(docs/performance.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_api.payload import point_id
from rag_api.store import PointData, Selector, Store, open_store
from rag_api.store.edge import EdgeStore
from tests.store.test_engines import fill, vector

TEMPORARY = Selector(origin="api", persist=False)


def counted(store: Store, physical: str) -> tuple[dict[str, int], int]:
    """The chunks per source and the temporary ones, read point by point: what the counts say."""
    records = list(store.iter_records(physical, Selector(), fields=["source", "origin", "persist"]))
    temporary = [r for r in records if r.payload.get("persist") is False]
    return dict(Counter(r.payload["source"] for r in records)), len(temporary)


def counts(store: Store, physical: str) -> tuple[dict[str, int], int]:
    return store.sources(physical), store.count(physical, TEMPORARY)


def point(source: str, n: int, persist: bool = True) -> PointData:
    body = {"source": source, "text": f"t{n}", "origin": "api", "persist": persist}
    return PointData(point_id("docs", source, n), vector(n), body)


@pytest.fixture
def either(engine: str, make_settings) -> Iterator[Store]:
    opened = open_store(make_settings(Path("unused.yaml"), engine))
    yield opened
    opened.close()


def test_counts_follow_every_change(either: Store) -> None:
    store = either
    physical = fill(store)
    changes = [
        lambda: store.upsert(physical, [point("nuevo/1", 0, False), point("nuevo/1", 1)]),
        lambda: store.delete(physical, Selector(ids=(point("nuevo/1", 0).id,))),
        lambda: store.set_payload(physical, [point("nuevo/1", 1).id], {"source": "otro/2"}),
        lambda: store.set_payload(physical, [point("nuevo/1", 1).id], {"persist": False}),
        lambda: store.delete(physical, Selector(source_prefix="crm/")),
    ]
    seen = [counts(store, physical)]
    for change in changes:
        assert counts(store, physical) == seen[-1]  # asked again, unchanged
        change()
        seen.append(counts(store, physical))
        assert seen[-1] == counted(store, physical)
    assert [temporary for _, temporary in seen] == [0, 1, 0, 0, 1, 1]
    assert seen[1][0]["nuevo/1"] == 2 and seen[2][0]["nuevo/1"] == 1 and "nuevo/1" not in seen[3][0]
    assert "crm/cliente_456" in seen[4][0] and "crm/cliente_456" not in seen[5][0]
    store.drop_physical(physical)  # made again under the same name, it starts empty
    store.create_physical(physical, 4)
    store.upsert(physical, [point("solo", 0)])
    assert counts(store, physical) == ({"solo": 1}, 0)


def test_an_unchanged_shard_is_not_counted_again(tmp_path: Path, monkeypatch) -> None:
    store = EdgeStore(tmp_path / "qdrant")
    try:
        physical = fill(store)
        asked: list[str] = []
        call = store.shards.call

        def spied(physical: str, method: str, *args):
            asked.extend([method] if method in ("facet", "count") else [])
            return call(physical, method, *args)

        monkeypatch.setattr(store.shards, "call", spied)
        first = counts(store, physical)
        assert counts(store, physical) == first and asked == ["facet", "count"]
        crm = store.sources(physical, Selector(source_prefix="crm/"))
        assert crm == {k: v for k, v in first[0].items() if k.startswith("crm/")}
        assert store.sources(physical, Selector(source_prefix="crm/")) == crm and len(asked) == 3
        store.upsert(physical, [point("nuevo/1", 0)])
        assert counts(store, physical) == ({**first[0], "nuevo/1": 1}, 0) and len(asked) == 5
        with store.shards.closed(physical):  # the folder replaced (an index built aside, salvage)
            pass
        assert counts(store, physical) == ({**first[0], "nuevo/1": 1}, 0) and len(asked) == 7
    finally:
        store.close()
