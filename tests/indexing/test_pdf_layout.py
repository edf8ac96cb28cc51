"""A PDF's layout read: its title is the large text on its first page (BM25 indexes it with every
chunk of the document), and its page furniture (running lines, page numbers, a table of contents)
is chunked apart from its content, so a title page is not hidden whole for the contents list
under its title."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api import payload
from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing.chunking import read_chunks
from rag_api.indexing.layout import split_furniture, title_of
from rag_api.indexing.sync import sync_collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.store import Selector
from tests.conftest import hash_collection, write_config
from tests.indexing.test_formats import write_pdf_streams

CHUNKING = ChunkingConfig(size=512, overlap=50)  # a title page in one chunk
SECTIONS = ["Summary", "Network", "Budget", "Outlook", "Appendix", "References"]


def lines(size: int, y: int, texts: list[str]) -> str:
    """Text lines in Helvetica at `size` points, from height `y` down."""
    shown = " ".join(f"({text}) Tj 0 -{size + 4} Td" for text in texts)
    return f"BT /F1 {size} Tf 72 {y} Td {shown} ET"


def report(path: Path, title: list[str], body: list[str]) -> None:
    """A report: a title page (the title large, over two lines, above a contents list) and a
    page of body text, both under a running header and over a page number."""
    contents = [f"{n} {name} .................... {n + 1}" for n, name in enumerate(SECTIONS, 1)]
    cover = lines(24, 720, title) + " " + lines(12, 600, ["Contents"]) + " "
    write_pdf_streams(
        path,
        [
            lines(8, 770, [HEADER]) + " " + cover + lines(10, 570, contents) + " " + number(1),
            lines(8, 770, [HEADER]) + " " + lines(11, 720, body) + " " + number(2),
        ],
    )


def number(page: int) -> str:
    return lines(8, 40, [f"Page {page} of 2"])


HEADER = "Municipal Reports Series, Vol. 7"


BODY = [
    "Pipes along the northern ridge were replaced in spring.",
    "Leaks fell by a third and the pumping stations ran on schedule all year.",
]


def test_the_large_text_of_the_first_page_is_the_title_of_every_chunk(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    report(path, ["Kestrel Valley Water Authority", "Annual Report"], BODY)
    chunks = read_chunks(path, "report.pdf", CHUNKING).chunks
    assert {c.title for c in chunks} == {"Kestrel Valley Water Authority Annual Report"}


def test_page_furniture_is_chunked_apart_from_the_content(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    report(path, ["Kestrel Valley Water Authority", "Annual Report"], BODY)
    chunks = read_chunks(path, "report.pdf", CHUNKING).chunks
    contents = [f"{n} {name} .................... {n + 1}" for n, name in enumerate(SECTIONS, 1)]
    assert [(c.metadata["page"], c.text.splitlines()) for c in chunks] == [
        (1, ["Kestrel Valley Water Authority", "Annual Report"]),
        (1, [HEADER, "Contents", *contents, "Page 1 of 2"]),
        (2, BODY),
        (2, [HEADER, "Page 2 of 2"]),
    ]


@pytest.mark.parametrize(
    ("pages", "keep", "furniture"),
    [
        # a running header and page numbers, on every page
        (["Acme Manual\nIntro text.\n1", "Acme Manual\nMore text.\n2", "Acme Manual\nEnd.\n3"],
         None, ["Acme Manual\n1", "Acme Manual\n2", "Acme Manual\n3"]),
        # a heading whose number changes atop two pages is content; atop three, a running line
        (["Chapter 1\nIntro text.", "Chapter 2\nMore text."], None, ["", ""]),
        (["Part 1\nA text.", "Part 2\nB text.", "Part 3\nC text."], None,
         ["Part 1", "Part 2", "Part 3"]),
        # the same line on one page's edge only is content
        (["Acme Manual\nIntro text.", "Other start\nMore text."], None, ["", ""]),
        # a line in the middle of pages is not a running line
        (["A\nB\nSafety first\nC\nD", "E\nF\nSafety first\nG\nH"], None, ["", ""]),
        # the document's title is content even where it runs as a header
        (["Acme Manual\nIntro text.", "Acme Manual\nMore text."], "Acme Manual", ["", ""]),
        # a contents list with its heading; two contents lines without one are content
        (["Title\nContents\nIntro ..... 2\nUse ..... 3\nBody text."], None,
         ["Contents\nIntro ..... 2\nUse ..... 3"]),
        (["Title\nIntro ..... 2\nUse ..... 3\nBody text."], None, [""]),
    ],
)  # fmt: skip
def test_furniture_rules(pages: list[str], keep: str | None, furniture: list[str]) -> None:
    assert [apart for _, apart in split_furniture(pages, keep)] == furniture


def test_a_pdf_set_in_one_size_has_no_title_from_its_layout(tmp_path: Path) -> None:
    path = tmp_path / "memo.pdf"
    write_pdf_streams(path, [lines(11, 720, ["Memo to all staff", *BODY])])
    assert [c.title for c in read_chunks(path, "memo.pdf", CHUNKING).chunks] == [None]


@pytest.mark.parametrize(
    ("pages", "title"),
    [
        ([], None),
        ([[("", 30.0)], [("Body text", 10.0)]], None),  # no letters on the first page
        ([[("Title", 14.0), ("body " * 40, 10.0)]], "Title"),
        ([[("Big", 11.0), ("body " * 40, 10.0)]], None),  # not clearly larger than the body
        ([[("T", 40.0), ("he body " * 40, 10.0)]], None),  # a drop cap
        ([[("Long " * 50, 30.0), ("body " * 400, 10.0)]], None),  # a page set large
    ],
)
def test_title_rules(pages: list[list[tuple[str, float]]], title: str | None) -> None:
    assert title_of(pages) == title


@pytest.fixture
def reports(tmp_path: Path, make_settings, open_hub) -> Hub:
    kb = tmp_path / "kb"
    kb.mkdir()
    report(kb / "kestrel.pdf", ["Kestrel Valley Water Authority", "Annual Report"], BODY)
    other = ["Bus lanes opened on the ring road.", "Ridership grew in every district."]
    report(kb / "transit.pdf", ["Harbour City Transit", "Annual Report"], other)
    config = write_config(
        tmp_path / "collections.yaml", {"reports": hash_collection(kb, chunking={"size": 512})}
    )
    return open_hub(make_settings(config))


def test_a_title_above_a_hidden_contents_list_is_found(reports: Hub) -> None:
    collection = reports.collection("reports")
    assert sync_collection(collection).errors == {}
    fields = [payload.TEXT, payload.SOURCE, payload.METADATA, payload.TYPE]
    types = {
        (r.payload[payload.SOURCE][0], r.payload[payload.METADATA]["page"],
         r.payload[payload.TEXT].split("\n")[0]): r.payload[payload.TYPE]
        for r in collection.records(Selector(), fields=fields)
    }  # fmt: skip
    assert types == {
        **{(name, page, HEADER): "boilerplate" for name in "kt" for page in (1, 2)},
        ("k", 1, "Kestrel Valley Water Authority"): "prose",
        ("k", 2, BODY[0]): "prose",
        ("t", 1, "Harbour City Transit"): "prose",
        ("t", 2, "Bus lanes opened on the ring road."): "prose",
    }
    passages = search(collection, SearchRequest("kestrel", mode="sparse")).passages
    assert {(p.source, p.metadata["page"]) for p in passages} == {
        ("kestrel.pdf", 1),
        ("kestrel.pdf", 2),
    }


def test_content_keeps_its_paragraph_breaks() -> None:
    pages = ["Acme Manual\n\nPara one.\n\nPara two.\n7", "Acme Manual\nOther page.\n8"]
    assert split_furniture(pages) == [
        ("Para one.\n\nPara two.", "Acme Manual\n7"),
        ("Other page.", "Acme Manual\n8"),
    ]
