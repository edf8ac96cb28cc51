"""Labels written onto stored points (over the classifier's, rag_api.points.labels), for tests of
what uses them: the point keeps its vectors, its payload gains (or loses) the label fields."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api import payload
from rag_api.hub import Hub
from rag_api.points.collection import Collection
from rag_api.settings import Settings
from rag_api.store import PointData, Selector
from tests.conftest import LiveServer, _empty_server, hash_collection, write_config
from tests.support.fakes import FakeOllama
from tests.support.openai_support import index


def labels(kind: str, quality: float, *reasons: str) -> dict[str, Any]:
    """The payload fields of a chunk's labels."""
    return {payload.TYPE: kind, payload.QUALITY: quality, payload.QUALITY_REASONS: list(reasons)}


def label(collection: Collection, selector: Selector, fields: dict[str, Any]) -> int:
    """Give every selected point of `collection` these payload fields; how many were changed."""
    info = collection.info(refresh=True)
    assert info is not None, f"{collection.name} holds nothing yet"
    records = list(collection.scan(selector, with_dense=True))
    points = [
        PointData(r.id, r.dense or [], {**r.payload, **fields}, collection.sparse_of(r.payload))
        for r in records
    ]
    collection.store.upsert(info.physical, points)
    return len(points)


def unlabel(collection: Collection, selector: Selector) -> int:
    """Take the label fields off the selected points, as a chunk written before labels (or by
    another tool) has none; how many were changed."""
    info = collection.info(refresh=True)
    assert info is not None, f"{collection.name} holds nothing yet"
    records = list(collection.scan(selector, with_dense=True))
    points = [
        PointData(
            r.id,
            r.dense or [],
            {k: v for k, v in r.payload.items() if k not in payload.LABEL_FIELDS},
            collection.sparse_of(r.payload),
        )
        for r in records
    ]
    collection.store.upsert(info.physical, points)
    return len(points)


# --- a labelled world: one kb, its chunks labelled, served live ---------------------------------

KB = {
    "refunds.md": "# Refunds\n\nRefunds are possible within 30 days of purchase, with the receipt.\n",
    "footer.md": "Home | Refunds | Pricing | Contact. Cookie settings. (c) 2026 Lumen, all rights "
    "reserved.\n",
    "scan.md": "R e f u n d s a r e p o s s i b l e w i t h i n 3 0 d a y s\n",
    "legacy.md": "Refund requests after 30 days go to the billing team.\n",  # never labelled
}
FOOTER, GARBAGE = "Cookie settings", "R e f u n d s"
LABELS = {
    "refunds.md": labels("prose", 0.9),
    "footer.md": labels("boilerplate", 0.8),
    "scan.md": labels("prose", 0.1, "broken_extraction", "low_ocr_confidence"),
}
QUESTION = "Refunds within 30 days?"
EVERY_TYPE = list(payload.CHUNK_TYPES)
# what a search of `docs` (the defaults: no boilerplate, quality 0.3 or more) finds
DEFAULT_FOUND = {"refunds.md", "legacy.md"}
ALL_FOUND = set(KB)


@dataclass
class LabelledWorld:
    """`docs` (collection defaults, answered by a fake Ollama), `everything` (retrieval.types
    all of them, min_quality 0; extractive) and `other`, over the same kb, labelled; router `auto`."""

    live: LiveServer
    ollama: FakeOllama

    def client(self) -> httpx.Client:
        return self.live.client()

    def prompts(self) -> list[str]:
        """Every prompt the fake LLM was sent, its messages joined."""
        return [
            "\n".join(str(m.get("content")) for m in call.body["messages"])
            for call in self.ollama.calls("/api/chat")
        ]


def engine_url(request: pytest.FixtureRequest) -> str | None:
    """The qdrant_url of the `engine` parameter (conftest.ENGINES) of a module-scoped fixture."""
    if request.param == "server":
        url = request.getfixturevalue("qdrant_server_url")
        _empty_server(url)
        return url
    return {"edge": None, "memory": ":memory:"}[request.param]


@contextmanager
def labelled_world(root: Path, qdrant_url: str | None) -> Iterator[LabelledWorld]:
    kb = root / "kb"
    kb.mkdir()
    for name, text in KB.items():
        (kb / name).write_text(text, encoding="utf-8")
    searching = {"threshold": -1.0, "top_k": 10}  # every chunk is a candidate: labels decide
    with FakeOllama() as ollama:
        llm = {"provider": "ollama", "model": "llama3.2", "base_url": ollama.url}
        collections = {
            "docs": hash_collection(kb, retrieval=searching, llm=llm),
            "everything": hash_collection(
                kb, retrieval={**searching, "types": EVERY_TYPE, "min_quality": 0.0}
            ),
            "other": hash_collection(kb, retrieval=searching),
        }
        router = {"name": "auto", "min_passages": 1}
        config = write_config(root / "collections.yaml", collections, router=router)
        settings = Settings(
            config=config,
            data_dir=root / "data",
            qdrant_url=qdrant_url,
            ollama_url="http://127.0.0.1:9",
        )
        hub = Hub.open(settings)
        try:
            index(hub, *collections)
            for name in collections:
                for source, fields in LABELS.items():
                    assert label(hub.collection(name), Selector(sources=(source,)), fields) == 1
                assert unlabel(hub.collection(name), Selector(sources=("legacy.md",))) == 1
            live = LiveServer(settings, hub).start()
            try:
                yield LabelledWorld(live, ollama)
            finally:
                live.stop()
        finally:
            hub.close()


def found(items: list[dict[str, Any]]) -> set[str]:
    """The sources of a response's sources or results."""
    return {item["source"] for item in items}


def label_file(collection: Collection, rel: str, low: int, *reasons: str) -> int:
    """Label a kb file's chunks: the first `low` prose of quality 0.1 for `reasons`, the others
    prose of quality 0.9; how many chunks the file has."""
    records = sorted(
        collection.scan(Selector(files=(rel,))), key=lambda r: r.payload[payload.CHUNK_INDEX]
    )
    for n, record in enumerate(records):
        fields = labels("prose", 0.1, *reasons) if n < low else labels("prose", 0.9)
        label(collection, Selector(ids=(record.id,)), fields)
    return len(records)
