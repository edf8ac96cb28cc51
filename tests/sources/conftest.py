"""What the sources' tests share: a hub of one collection whose documents come from sources."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_api.hub import Hub
from rag_api.payload import StoredChunk
from rag_api.sources.sync import SourceReport
from tests.conftest import hash_collection, wait_for, write_config
from tests.support.site import Site, docs_site


@pytest.fixture
def site() -> Iterator[Site]:
    """The documentation site of tests/support/site.py on loopback."""
    with Site() as running:
        yield docs_site(running)


def web_block(site: Site, **settings: Any) -> dict[str, Any]:
    """A web source on `site`: its sitemap and its links from the home page."""
    block = {
        "name": "help",
        "kind": "web",
        "url": f"{site.url}/",
        "sitemap": f"{site.url}/sitemap.xml",
        "allow_private": True,  # the site is on loopback
        "rate": 1000,
    }
    return {**block, **settings}


@pytest.fixture
def source_hub(tmp_path: Path, make_settings, open_hub) -> Callable[..., Hub]:
    """A hub whose collection `docs` (and any `others`) has these sources (and, with `kb`, a kb
    folder), on the engine asked for."""

    def make(
        *sources: dict[str, Any], engine: str = "edge", kb: Path | None = None, **others: Any
    ) -> Hub:
        collections = {"docs": hash_collection(kb, sources=list(sources))}
        collections |= {
            name: hash_collection(None, sources=blocks) for name, blocks in others.items()
        }
        config = write_config(tmp_path / "collections.yaml", collections)
        return open_hub(make_settings(config, engine))

    return make


def documents(hub: Hub, collection: str = "docs") -> dict[str, list[StoredChunk]]:
    """Each document of the collection and its chunks (by chunk_index)."""
    found: dict[str, list[StoredChunk]] = {}
    for record in hub.collection(collection).scan():
        chunk = StoredChunk(record.payload)
        found.setdefault(chunk.source, []).append(chunk)
    return {
        name: sorted(chunks, key=lambda c: c.chunk_index or 0) for name, chunks in found.items()
    }


def sync(
    hub: Hub, source: str | None = None, collection: str = "docs", **asked: Any
) -> SourceReport:
    """Sync the source (the collection's first, unless named) in this process."""
    name = source or hub.collection(collection).cfg.sources[0].name
    return hub.sources.run(collection, name, **asked)


def finished(http: Any, job_id: str) -> dict[str, Any]:
    """The job once it ended (done or failed), polled through the HTTP API."""
    return wait_for(lambda: (j := http.get(f"/v1/jobs/{job_id}").json())["finished_at"] and j, 60)
