"""The collection's cached description of what it reads (`Collection.info`) never outlives a
switch: a look-up that read the alias before a migration's swap, and finished after it, must not
be kept, or searches after the swap read the new configuration against the old collection (a
409 DIMENSION_MISMATCH mid-migration, seen by a client that listed collections meanwhile)."""

from __future__ import annotations

import sys
import threading

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from tests.conftest import hash_collection, wait_for, write_config
from tests.support.writes import replace_source


def waiting_in_the_store(thread: threading.Thread) -> bool:
    """`thread` is inside the embedded store's guarded call (it read the alias already)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "call" and frame.f_code.co_filename.endswith("edge_shards.py"):
            return True
        frame = frame.f_back
    return False


def test_a_look_up_begun_before_a_switch_is_not_kept_after_it(tmp_path, make_settings) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(dim=32)})
    hub = Hub.open(make_settings(config, "edge"))
    try:
        collection = hub.collection("docs")
        replace_source(collection, "api/a", [Chunk("Otters hold hands.", "api/a", 0)], {})
        old = collection.info(refresh=True)
        new_cfg = collection.cfg.model_copy(
            update={"embedder": collection.cfg.embedder.model_copy(update={"dim": 16})}
        )
        hub.store.create_physical("docs__v2", 16)
        with hub.store.shards.guard:  # the look-up will wait inside the store, alias read
            collection.invalidate()
            looker = threading.Thread(target=collection.info)
            looker.start()
            wait_for(lambda: waiting_in_the_store(looker))
            collection.switch(new_cfg, "docs__v2")  # the migration's swap
        looker.join(timeout=30)
        info = collection.info()
        assert info is not None and info.physical == "docs__v2" != old.physical
        assert collection.searchable().info.dim == 16
    finally:
        hub.close()
