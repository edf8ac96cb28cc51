"""PDF and DOCX kb files: read, chunked at their headings, indexed; without the extra, a clear line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import docx
import pytest

from rag_api.chunking import UnreadableFile, read_chunks
from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.retrieval import SearchRequest, search
from rag_api.sync import sync_collection
from tests.conftest import hash_collection, write_config


def write_pdf(path: Path, pages: list[str]) -> None:
    """A minimal valid PDF (catalog, pages, Helvetica, one text stream per page), written by hand."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for n, text in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * n} 0 R >>"
        )
        lines = " ".join(f"({line}) Tj 0 -16 Td" for line in text.splitlines())
        stream = f"BT /F1 12 Tf 72 720 Td {lines} ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    path.write_bytes(bytes(out))


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Boarding", level=1)
    document.add_paragraph("Gates close twenty minutes before departure; bring your boarding pass.")
    document.add_heading("Luggage", level=2)
    document.add_paragraph("One cabin bag of up to eight kilograms is included in every fare.")
    document.save(str(path))


CHUNKING = ChunkingConfig(size=200, overlap=20)


def test_pdf_text_is_read_page_by_page(tmp_path: Path) -> None:
    path = tmp_path / "manual.pdf"
    write_pdf(path, ["Chapter one covers the heat pump.", "Chapter two covers defrosting."])
    chunks = read_chunks(path, "manual.pdf", CHUNKING).chunks
    text = " ".join(c.text for c in chunks)
    assert "heat pump" in text and "defrosting" in text


def test_docx_headings_become_markdown_sections(tmp_path: Path) -> None:
    path = tmp_path / "travel.docx"
    write_docx(path)
    chunks = read_chunks(path, "travel.docx", CHUNKING).chunks
    assert [c.text.splitlines()[0] for c in chunks] == ["# Boarding", "## Luggage"]


def test_damaged_pdf_and_docx_are_unreadable_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(UnreadableFile, match="unreadable PDF"):
        read_chunks(tmp_path / "broken.pdf", "broken.pdf", CHUNKING)
    with pytest.raises(UnreadableFile, match="unreadable DOCX"):
        read_chunks(tmp_path / "broken.docx", "broken.docx", CHUNKING)


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    kb = tmp_path / "kb"
    kb.mkdir()
    write_pdf(kb / "manual.pdf", ["The heat pump needs defrosting in winter."])
    write_docx(kb / "travel.docx")
    (kb / "notes.md").write_text("Plain notes about kilograms and pumps.")
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(kb)})
    return open_hub(make_settings(config))


def test_pdf_and_docx_are_indexed_and_searchable(hub: Hub) -> None:
    collection = hub.collection("notes")
    report = sync_collection(collection)
    assert report.errors == {} and report.indexed == 3

    def sources(word: str) -> set[str]:
        outcome = search(collection, SearchRequest(word, mode="sparse"))
        return {p.source for p in outcome.passages}

    assert sources("defrosting") == {"manual.pdf"}
    assert sources("cabin") == {"travel.docx"}


@pytest.mark.parametrize(
    ("module", "name", "extra"), [("pypdf", "manual.pdf", "pdf"), ("docx", "travel.docx", "docx")]
)
def test_without_the_extra_the_file_is_skipped_with_a_line_naming_it(
    hub: Hub,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    module: str,
    name: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if the package were not installed
    with caplog.at_level(logging.WARNING, logger="rag_api.sync"):
        report = sync_collection(hub.collection("notes"))

    assert report.indexed == 2 and set(report.errors) == {name}
    lines = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(lines) == 1 and f"the '{extra}' extra: pip install 'rag-hub[{extra}]'" in lines[0]
