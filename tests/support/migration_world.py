"""Shared setup of the migration tests: a collection with file and API chunks, a slow upstream."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.indexing.sync import sync_collection
from rag_api.points.collection import Collection
from rag_api.store import Selector
from tests.support.fakes.http import Request, Response
from tests.support.fakes.openai_upstream import FakeOpenAI

ANIMALS = ["otter", "heron", "lynx", "badger", "falcon", "marten", "ibex", "gecko"]
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Tunis", "Perth", "Lima", "Riga"]
FOODS = ["fish", "grain", "berries", "insects", "seeds", "meat"]
QUESTIONS = ["Which otter visited Lisbon?", "heron in Oslo", "the lynx of Quito", "badger Hanoi"]


def fill(collection: Collection, kb: Path, api_sources: int = 6, per_source: int = 4) -> None:
    """kb files indexed by the sync, plus chunks written through the API's write path."""
    kb.mkdir(exist_ok=True)
    for n, city in enumerate(CITIES[:3]):
        lines = [
            f"In {city} the {animal} keeper feeds animal {i} at {7 + i % 5} with {food}."
            for i, (animal, food) in enumerate(zip(ANIMALS * 3, FOODS * 4, strict=False))
        ]
        (kb / f"{city.lower()}-{n}.md").write_text(" ".join(lines), encoding="utf-8")
    sync_collection(collection)
    write_api(collection, range(api_sources), per_source)


def write_api(collection: Collection, sources: range, per_source: int, tag: str = "") -> None:
    """API chunks (origin api), as /v1/rag/upsert writes them."""
    writes = []
    for s in sources:
        source = f"api/record-{s}"
        chunks = [
            Chunk(
                f"Record {s}.{i}{tag}: the {ANIMALS[(s + i) % 8]} visited {CITIES[(s * 3 + i) % 8]} "
                f"on day {i} and stayed {s + i} nights.",
                source,
                i,
            )
            for i in range(per_source)
        ]
        payload = {"origin": "api", "persist": True, "dynamic": False}
        writes.append(DocumentWrite(collection, Selector(sources=(source,)), chunks, payload))
    write_documents(collection, writes)


class SlowUpstream(FakeOpenAI):
    """An OpenAI-compatible embeddings API that answers `open_for` requests, then waits for
    `gate` before each further one: a migration stays mid-copy for as long as a test needs."""

    def __init__(self, dim: int = 32, open_for: int = 0) -> None:
        super().__init__(embed_models={"fake-embed": dim})
        self.open_for = open_for
        self.gate = threading.Event()
        self._answer = self.routes[("POST", "/v1/embeddings")]
        self.routes[("POST", "/v1/embeddings")] = self._gated

    def _gated(self, request: Request) -> Response:
        if len(self.calls("/v1/embeddings")) > self.open_for:
            self.gate.wait(timeout=120)
        return self._answer(request)

    def embedder(self, **extra: Any) -> dict[str, Any]:
        """The embedder entry that points at this upstream."""
        return {"provider": "openai", "model": "fake-embed", "dim": self.embed_models["fake-embed"],
                "base_url": f"{self.url}/v1", **extra}  # fmt: skip
