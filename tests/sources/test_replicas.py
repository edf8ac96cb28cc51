"""With replicas, a source's state lives in the deployment's system collection: a writer that
replaces another carries on where it stopped (docs/sources.md). The deployment is one qdrant-client
in local mode shared by the hubs of this process, as in tests/replicas."""

from __future__ import annotations

import threading
from pathlib import Path

from qdrant_client import QdrantClient

from rag_api.hub import Hub
from rag_api.replicas.shared_sources import SharedStates
from rag_api.settings import Settings
from rag_api.store.remote import RemoteStore
from tests.conftest import hash_collection, write_config
from tests.sources.conftest import documents, sync, web_block


def test_a_new_writer_carries_on_where_the_last_one_stopped(tmp_path: Path, site) -> None:
    client, guard = QdrantClient(location=":memory:"), threading.RLock()
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection(None, sources=[web_block(site)])}
    )

    def writer(node: str) -> Hub:
        settings = Settings(
            config=config,
            data_dir=tmp_path / node,
            qdrant_url="http://qdrant.test:6333",  # never dialled: the store is given
            role="writer",
        )
        store = RemoteStore.sharing(client, guard, "qdrant (one in-memory client)")
        return Hub.open(settings, store=store).start()

    first = writer("first")
    assert isinstance(first.sources.states, SharedStates)
    sync(first)
    held = documents(first)
    first.close()
    bodies = site.bodies("/")

    second = writer("second")  # another machine: none of the first one's files
    try:
        row = second.sources.status("docs")["sources"][0]
        assert row["last"]["indexed"] == len(held) and row["documents"] == len(held)
        again = sync(second)
        assert again.unchanged == len(held) and again.indexed == 0
        assert site.bodies("/") == bodies  # the links and validators came with the state
        assert documents(second).keys() == held.keys()
    finally:
        second.close()
    assert not (tmp_path / "second" / "sources").exists()
