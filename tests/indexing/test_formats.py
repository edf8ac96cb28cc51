"""Office and web formats keep their content: tables as rows, where each chunk came from, a scan
reported; without the extra, a clear line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest

from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing.chunking import UnreadableFile, read_chunks
from rag_api.indexing.readers import html_to_text
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from rag_api.search.retrieval import SearchRequest, search
from tests.conftest import hash_collection, write_config


def write_pdf(path: Path, pages: list[str]) -> None:
    """A PDF with one page of Helvetica text lines per item of `pages`."""
    streams = []
    for text in pages:
        lines = " ".join(f"({line}) Tj 0 -16 Td" for line in text.splitlines())
        streams.append(f"BT /F1 12 Tf 72 720 Td {lines} ET")
    write_pdf_streams(path, streams)


def write_pdf_table(path: Path, rows: list[list[str]]) -> None:
    """A one-page PDF laying `rows` out as a table: each cell drawn at its own column position,
    with ruled lines between rows, the way report generators write them."""
    cells = []
    for r, row in enumerate(rows):
        y = 700 - 20 * r
        cells += [f"1 0 0 1 {72 + 150 * c} {y} Tm ({cell}) Tj" for c, cell in enumerate(row)]
        cells.append(f"ET 72 {y - 6} m 522 {y - 6} l S BT /F1 11 Tf")
    write_pdf_streams(path, ["BT /F1 11 Tf " + " ".join(cells) + " ET"])


def write_pdf_streams(path: Path, streams: list[str]) -> None:
    """A minimal valid PDF (catalog, pages, Helvetica, one content stream per page), by hand."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(len(streams)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(streams)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for n, stream in enumerate(streams):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * n} 0 R >>"
        )
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
    with caplog.at_level(logging.WARNING, logger="rag_api.indexing.sync"):
        report = sync_collection(hub.collection("notes"))

    assert report.indexed == 2 and set(report.errors) == {name}
    lines = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(lines) == 1 and f"the '{extra}' extra: pip install 'rag-hub[{extra}]'" in lines[0]


ROSTER = [["Team", "City", "Wins"], ["Otters", "Berlin", "twelve"], ["Herons", "Lyon", "nine"]]


def test_html_table_rows_keep_their_cells_together() -> None:
    html = (
        "<h2>Roster</h2><table><tr><th>Team</th><th>City</th></tr>"
        "<tr><td>Otters</td><td>Berlin | Mitte</td></tr><tr><td><p>Herons</p></td><td>Lyon</td></tr>"
        "</table><p>After the table.</p>"
    )
    text = html_to_text(html)
    assert "## Roster" in text
    assert (
        "| Team | City |\n| --- | --- |\n| Otters | Berlin \\| Mitte |\n| Herons | Lyon |" in text
    )
    assert text.endswith("After the table.")


def write_docx_with_table(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Roster", level=1)
    document.add_paragraph("The teams of the 2026 season are listed below.")
    table = document.add_table(rows=0, cols=3)
    for row in ROSTER:
        cells = table.add_row().cells
        for cell, value in zip(cells, row, strict=True):
            cell.text = value
    document.add_paragraph("Results are updated every Monday.")
    document.save(str(path))


def test_docx_tables_are_read_in_document_order(tmp_path: Path) -> None:
    path = tmp_path / "roster.docx"
    write_docx_with_table(path)
    chunks = read_chunks(path, "roster.docx", ChunkingConfig(size=1000, overlap=50)).chunks
    assert [c.text for c in chunks] == [
        "# Roster\n\nThe teams of the 2026 season are listed below.\n\n"
        "| Team | City | Wins |\n| --- | --- | --- |\n| Otters | Berlin | twelve |\n"
        "| Herons | Lyon | nine |\n\nResults are updated every Monday."
    ]


def test_csv_rows_are_grouped_under_a_repeated_header(tmp_path: Path) -> None:
    rows = ["sku;name;price"] + [f"A{n:03};Widget number {n};{n}.50" for n in range(1, 31)]
    (tmp_path / "prices.csv").write_text("\n".join(rows) + "\n")
    chunks = read_chunks(tmp_path / "prices.csv", "prices.csv", CHUNKING).chunks

    assert len(chunks) > 3 and all(len(c.text) <= CHUNKING.size for c in chunks)
    assert all(c.text.startswith("| sku | name | price |\n| --- | --- | --- |\n") for c in chunks)
    assert chunks[0].metadata["rows"].startswith("2-") and chunks[-1].metadata["rows"].endswith(
        "-31"
    )
    body = [line for c in chunks for line in c.text.splitlines()[2:]]
    assert body == [f"| A{n:03} | Widget number {n} | {n}.50 |" for n in range(1, 31)]


def test_tsv_is_split_at_tabs(tmp_path: Path) -> None:
    (tmp_path / "t.tsv").write_text("city\tcountry\nLyon, Rhône\tFrance\n")
    chunks = read_chunks(tmp_path / "t.tsv", "t.tsv", CHUNKING).chunks
    assert chunks[0].text.splitlines()[2] == "| Lyon, Rhône | France |"
    assert chunks[0].metadata == {"rows": "2"}


def write_xlsx(path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Teams"
    for row in [["Team", "Founded", "Colours"], ["Lynxes", 1998, "green"], ["Pumas", 2004, "red"]]:
        sheet.append(row)
    sheet["E1"] = None  # formatting beyond the data adds no empty columns
    budget = book.create_sheet("Budget")
    budget.append(["Item", "Cost"])
    budget.append(["Jerseys", 1200.0])
    budget.append(["Total", "=SUM(B2:B2)"])
    book.save(str(path))


def test_xlsx_each_sheet_keeps_its_header_and_name(tmp_path: Path) -> None:
    path = tmp_path / "club.xlsx"
    write_xlsx(path)
    chunks = read_chunks(path, "club.xlsx", CHUNKING).chunks
    assert [c.metadata for c in chunks] == [
        {"sheet": "Teams", "rows": "2-3"},
        {"sheet": "Budget", "rows": "2-3"},
    ]
    assert chunks[0].text == (
        "# Teams\n\n| Team | Founded | Colours |\n| --- | --- | --- |\n"
        "| Lynxes | 1998 | green |\n| Pumas | 2004 | red |"
    )
    assert "| Jerseys | 1200 |" in chunks[1].text


def write_pptx(path: Path) -> None:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Season kickoff"
    first.placeholders[1].text = "Training starts on March 3"
    first.notes_slide.notes_text_frame.text = "Mention the new coach, Ada Brandt."
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Standings"
    inches = pptx.util.Inches
    table = second.shapes.add_table(3, 2, inches(1), inches(2), inches(6), inches(2)).table
    for r, row in enumerate([["Rank", "Team"], ["1", "Kestrels"], ["2", "Ravens"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    deck.save(str(path))


def test_pptx_slides_keep_title_body_tables_and_notes(tmp_path: Path) -> None:
    path = tmp_path / "kickoff.pptx"
    write_pptx(path)
    chunks = read_chunks(path, "kickoff.pptx", ChunkingConfig(size=1000, overlap=50)).chunks
    assert [c.metadata for c in chunks] == [{"slide": 1}, {"slide": 2}]
    assert chunks[0].text == (
        "# Season kickoff\n\nTraining starts on March 3\n\nNotes: Mention the new coach, Ada Brandt."
    )
    assert chunks[1].text == (
        "# Standings\n\n| Rank | Team |\n| --- | --- |\n| 1 | Kestrels |\n| 2 | Ravens |"
    )


def test_pdf_chunks_carry_their_page(tmp_path: Path) -> None:
    path = tmp_path / "manual.pdf"
    write_pdf(path, ["Chapter one covers the heat pump.", "", "Chapter three covers defrosting."])
    chunks = read_chunks(path, "manual.pdf", CHUNKING).chunks
    assert [(c.text, c.metadata) for c in chunks] == [
        ("Chapter one covers the heat pump.", {"page": 1}),
        ("Chapter three covers defrosting.", {"page": 3}),
    ]


@pytest.fixture
def office(tmp_path: Path, make_settings, open_hub) -> Hub:
    kb = tmp_path / "kb"
    kb.mkdir()
    write_pdf_table(kb / "standings.pdf", [["Team", "Coach"], ["Falcons", "Marta Quill"]])
    write_pdf_streams(kb / "scan.pdf", ["0 0 m 100 100 l S", "72 72 m 200 200 l S"])
    write_docx_with_table(kb / "roster.docx")
    write_xlsx(kb / "club.xlsx")
    write_pptx(kb / "kickoff.pptx")
    (kb / "fees.csv").write_text("Membership,Fee\nJunior,forty euros\nSenior,ninety euros\n")
    (kb / "page.html").write_text(
        "<h1>Venues</h1><table><tr><th>Venue</th><th>Surface</th></tr>"
        "<tr><td>Riverside Arena</td><td>parquet</td></tr></table>"
    )
    config = write_config(tmp_path / "collections.yaml", {"club": hash_collection(kb)})
    return open_hub(make_settings(config))


def test_questions_about_table_cells_find_their_file_and_place(
    office: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    collection = office.collection("club")
    with caplog.at_level(logging.WARNING, logger="rag_api.indexing.sync"):
        report = sync_collection(collection)
    assert report.indexed == 6 and set(report.errors) == {"scan.pdf"}
    assert "no extractable text in 2 page(s)" in report.errors["scan.pdf"]
    assert any("skipped scan.pdf: no extractable text" in r.getMessage() for r in caplog.records)

    def top(question: str) -> tuple[str, dict]:
        passage = search(collection, SearchRequest(question, top_k=1)).passages[0]
        return passage.source, dict(passage.metadata)

    assert top("Who coaches the Falcons?") == ("standings.pdf", {"page": 1})
    assert top("Which city are the Otters from, Berlin?")[0] == "roster.docx"
    assert top("Which rank do the Kestrels hold?") == ("kickoff.pptx", {"slide": 2})
    assert top("How much does the Jerseys item cost?") == (
        "club.xlsx",
        {"sheet": "Budget", "rows": "2-3"},
    )
    assert top("What is the Junior membership fee?") == ("fees.csv", {"rows": "2-3"})
    assert top("Who is the new coach Ada Brandt?") == ("kickoff.pptx", {"slide": 1})
    assert top("What surface does Riverside Arena have?")[0] == "page.html"


def test_check_reports_a_scanned_pdf_as_having_no_extractable_text(office: Hub) -> None:
    sync_collection(office.collection("club"))
    findings = run_check(office, "club").as_dict()["findings"]
    assert [(f["subject"], f["severity"]) for f in findings] == [("scan.pdf", "warning")]
    assert "no extractable text" in findings[0]["detail"]
