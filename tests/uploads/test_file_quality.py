"""GET /v1/collections/{c}/files: each kb file's quality summary by its chunks' labels (what the
console shows per file), on both engines; null for a file without labelled chunks."""

from __future__ import annotations

from pathlib import Path

from rag_api.indexing.sync import sync_collection
from rag_api.store import Selector
from tests.support.labels import label_file, unlabel
from tests.uploads.conftest import file_states


def test_each_file_shows_its_low_quality_chunks_and_reasons(start, kb: Path, engine) -> None:
    (kb / "scan.md").write_text(
        "# Scan\n\n" + " ".join(f"Page {i} of the scanned manual, read badly." for i in range(9))
    )
    (kb / "legacy.md").write_text("Written before labels existed.\n")
    server = start(engine=engine)
    docs = server.hub.collection("docs")
    sync_collection(docs)
    scan = label_file(docs, "scan.md", 0)
    assert scan >= 3
    label_file(docs, "scan.md", scan - 1, "broken_extraction", "low_ocr_confidence")
    label_file(docs, "faq.md", 0)
    assert unlabel(docs, Selector(files=("legacy.md",))) == 1
    with server.client() as http:
        states = file_states(http)
    assert states["scan.md"]["quality"] == {
        "labelled_chunks": scan,
        "low_quality_chunks": scan - 1,
        "min_quality": 0.3,
        "quality_reasons": ["broken_extraction", "low_ocr_confidence"],
        "mostly_low_quality": True,
    }
    assert states["faq.md"]["quality"] == {
        "labelled_chunks": 1,
        "low_quality_chunks": 0,
        "min_quality": 0.3,
        "quality_reasons": [],
        "mostly_low_quality": False,
    }
    assert states["legacy.md"]["quality"] is None
