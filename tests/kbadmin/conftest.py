"""What the /v1/rag/* suites share: one plain server, a client of the API, bodies."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from rag_api.settings import Settings
from tests.conftest import LiveServer, hash_collection, write_config


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the tests that only need the API to answer (no key, embedded store)."""
    root = tmp_path_factory.mktemp("plain")
    config = write_config(root / "c.yaml", {"docs": hash_collection()})
    server = LiveServer(Settings(config=config, data_dir=root / "data")).start()
    yield server
    server.stop()


DOC = {"source": "s", "text": "a document"}


def nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


def rag(server: LiveServer, **kwargs) -> httpx.Client:
    return httpx.Client(base_url=server.url + "/v1/rag", timeout=60, **kwargs)
