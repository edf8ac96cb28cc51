"""After a crash, a collection that cannot be read when the store opens is recovered at the next
open: its torn replacements are completed then (the crash's marker is kept until they are)."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rag_api.errors import StoreUnavailable
from rag_api.hub import Hub
from rag_api.store import open_store
from rag_api.store.open_marker import FOLDER
from tests.conftest import hash_collection, write_config
from tests.points.test_generations import torn_world, versions


def test_a_collection_unreadable_at_the_open_after_a_crash_is_recovered_at_the_next(
    tmp_path: Path, make_settings, caplog: pytest.LogCaptureFixture
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    entry = hash_collection(kb, chunking={"size": 64, "overlap": 0})
    settings = make_settings(write_config(tmp_path / "collections.yaml", {"docs": entry}), "edge")
    hub = Hub.open(settings)
    torn_world(hub, kb)
    torn = versions(hub)
    assert len(torn[0]) == 2  # the API document holds its old and its new version
    hub.store.close()  # the process dies: the store is released, the hub's marker stays

    store = open_store(settings)  # the engine, whose reads of the points fail for a while

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("qdrant", "timed out reading the collection")

    store.iter_records = unreadable  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="rag_api.catalog"):
        hub = Hub.open(settings, store=store)
    assert "docs: not recovered after the crash" in caplog.text
    del store.iter_records  # readable again
    assert versions(hub) == torn  # nothing completed yet
    hub.close()  # a clean close; the crash's marker is kept

    hub = Hub.open(settings)
    try:
        assert versions(hub) == (Counter({2: 4}), Counter({"2": torn[1]["2"]}))
    finally:
        hub.close()
    assert list((settings.data_dir / FOLDER).iterdir()) == []
