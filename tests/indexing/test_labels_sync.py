"""Labels through the real ingest path on both engines: boilerplate by repetition across files,
kept current as files come and go, and relabelling that never re-embeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api import payload
from rag_api.hub import Hub
from rag_api.indexing import kb as kb_files
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.sync import sync_collection
from rag_api.store import PointData
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

TOPICS = ["refunds", "invoices", "trials", "exports", "security", "storage"]
FOOTER = [
    "Lantern Row Software, 12 Harbour Street, Portland",
    "Opening hours: Monday to Friday, 9 to 5",
    "Follow us on Mastodon and on our newsletter",
]


def page(topic: str) -> str:
    body = " ".join(
        f"The {topic} rule number {i} says what happens to {topic} in a workspace."
        for i in range(6)
    )
    footer = "".join(f"<p>{line}</p>" for line in FOOTER)
    return (
        f"<html><body><main><h1>All about {topic}</h1><p>{body}</p></main>"
        f"<footer><h2>Contact</h2>{footer}</footer></body></html>"
    )


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for topic in TOPICS[:5]:
        (root / f"{topic}.html").write_text(page(topic))
    return root


@pytest.fixture
def hub(kb: Path, tmp_path: Path, engine: str, make_settings, open_hub) -> Hub:
    entry = hash_collection(kb, chunking={"size": 300, "overlap": 0})
    collections = {"docs": entry, "notes": hash_collection()}
    return open_hub(make_settings(write_config(tmp_path / "c.yaml", collections), engine))


def stored(hub: Hub) -> dict[str, tuple[dict, list[float] | None]]:
    docs = hub.collection("docs")
    physical = docs.info(refresh=True).physical
    return {r.id: (r.payload, r.dense) for r in hub.store.iter_records(physical, with_dense=True)}


def footers(points: dict[str, tuple[dict, list[float] | None]]) -> list[dict]:
    found = [body for body, _ in points.values() if FOOTER[1] in body["text"]]
    assert found and all(
        FOOTER[1] in body["text"] and "rule number" not in body["text"] for body in found
    )
    return found


def test_a_footer_on_five_pages_is_boilerplate_until_the_pages_go(hub: Hub, kb: Path) -> None:
    docs = hub.collection("docs")
    sync_collection(docs)
    before = stored(hub)
    assert {body["type"] for body in footers(before)} == {"boilerplate"}
    content = [body for body, _ in before.values() if "rule number" in body["text"]]
    assert content and {body["type"] for body in content} == {"prose"}

    for topic in TOPICS[:3]:  # two pages left: the footer is no longer repeated
        (kb / f"{topic}.html").unlink()
    sync_collection(docs)
    after = stored(hub)
    assert {body["type"] for body in footers(after)} == {"prose"}
    for pid, (body, dense) in after.items():  # relabelled in place, not rewritten
        assert dense == before[pid][1] and body[payload.SEQ] == before[pid][0][payload.SEQ]

    (kb / "trials.html").write_text(page("trials"))  # a third page: furniture again
    sync_collection(docs)
    assert {body["type"] for body in footers(stored(hub))} == {"boilerplate"}


def test_a_new_labels_version_relabels_every_file_without_embedding(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = hub.collection("docs")
    first = sync_collection(docs)
    monkeypatch.setattr(kb_files, "LABELS_VERSION", kb_files.LABELS_VERSION + 1)
    second = sync_collection(docs)
    assert second.indexed == first.indexed == 5
    assert second.stats.embedded == 0 and second.stats.reused == first.stats.written


def test_points_written_without_labels_are_labelled_at_the_first_write(hub: Hub) -> None:
    docs = hub.collection("notes")
    physical = docs.writable().physical
    foreign = PointData(
        "0b0e8a52-52c3-4d7c-9d7e-6f1d7c0a9b11",
        [0.1] * 64,
        {
            "page_content": "La caja se guarda automÃ¡ticamente cada dÃ­a y el cierre â€œZâ€ se imprime."
        },
    )
    hub.store.upsert(physical, [foreign])  # another tool's point (or one from before labels)
    assert "type" not in hub.store.retrieve(physical, [foreign.id])[0].payload

    note = Chunk("A fresh note: refunds are paid back within ten business days.", "note", 0)
    replace_source(docs, "note", [note], payload.api_provenance(True, False))
    body = hub.store.retrieve(physical, [foreign.id])[0].payload
    assert body["type"] == "prose" and "broken_extraction" in body["quality_reasons"]
