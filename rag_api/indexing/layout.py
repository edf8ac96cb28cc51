"""A PDF's layout, read from its text: the document's title (the text its first page sets
largest) and each page's furniture apart from its content (running headers and footers, page
numbers, a table of contents). rag_api.indexing.pdf chunks the furniture on its own, so no chunk
of content carries it and a title page is not hidden whole as boilerplate (rag_api.points.labels)
for the contents list under its title.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from rag_api.points.labels import CONTENTS, PAGE_MARK, TOC_LINE

TITLE_SCALE = 1.2  # a title's letters are at least this much larger than the body's
TITLE_CHARS = 200  # longer: a page set large, not a title
BODY_PAGES = 3  # the pages whose text sizes tell the body's size
EDGE_LINES = 2  # lines at a page's top and at its bottom where running headers and footers sit
TOC_RUN = 3  # contents lines in a row that make a table of contents (after a heading: 2)
_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[^\W\d_]")


def collect_sizes(pages: list[list[tuple[str, float]]]) -> Callable[..., None]:
    """A pypdf text visitor for one more page: keeps each run's text and rendered size (font size
    times the text and page matrices' scale)."""
    runs: list[tuple[str, float]] = []
    pages.append(runs)

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if text.strip():
            scale = math.sqrt(
                abs((cm[0] * cm[3] - cm[1] * cm[2]) * (tm[0] * tm[3] - tm[1] * tm[2]))
            )
            runs.append((text, float(size or 0) * scale))

    return visit


def title_of(pages: list[list[tuple[str, float]]]) -> str | None:
    """The title on the first of these pages (each a list of text runs and their sizes): its
    largest text, when that is set clearly larger than the body (the median size of the pages'
    letters) and title-sized; lines joined by spaces."""
    sized = sorted(
        (round(size, 1), n) for page in pages for text, size in page
        if (n := len(_LETTERS.findall(text)))
    )  # fmt: skip
    first = [(text, round(size, 1)) for text, size in (pages or [[]])[0] if _LETTERS.search(text)]
    if not first:
        return None
    half, seen = sum(n for _, n in sized) / 2, 0
    body = next(size for size, n in sized if (seen := seen + n) >= half)
    largest = max(size for _, size in first)
    if largest < body * TITLE_SCALE:
        return None
    title = " ".join(" ".join(text for text, size in first if size == largest).split())
    # a drop cap or a logo's initials is no title; a page set large is no title either
    return title if len(_LETTERS.findall(title)) >= 3 and len(title) <= TITLE_CHARS else None


def split_furniture(pages: list[str], keep: str | None = None) -> list[tuple[str, str]]:
    """Each page's (content, furniture), both in page order. A running line is one at the edge
    of at least two pages and half of them; one whose numbers change (`Page 3 of 9`) of at least
    three ("Chapter 1" and "Chapter 2" atop two pages are headings). Lines of `keep` (the
    document's title) are content wherever they are."""
    lines = [page.splitlines() for page in pages]
    edges = [_edges(page) for page in lines]
    seen: dict[str, list[str]] = {}  # a line's key -> the line as each page with it has it
    for page, indexes in zip(lines, edges, strict=True):
        for line in {_spaced(page[index]) for index in indexes}:
            seen.setdefault(_key(line), []).append(line)
    running = {
        key
        for key, found in seen.items()
        if len(found) >= (2 if len(set(found)) == 1 else 3) and len(found) * 2 >= len(lines)
    }
    kept = _spaced(keep or "")
    split = []
    for page, indexes in zip(lines, edges, strict=True):
        furniture = _contents(page)
        for index in indexes:
            line = _spaced(page[index])
            if (_key(line) in running or PAGE_MARK.match(line)) and not (
                kept and len(line) >= 4 and line in kept
            ):
                furniture.add(index)
        split.append(
            (
                "\n".join(line for i, line in enumerate(page) if i not in furniture).strip(),
                "\n".join(line for i, line in enumerate(page) if i in furniture),
            )
        )
    return split


def _spaced(line: str) -> str:
    return " ".join(line.lower().split())


def _key(line: str) -> str:
    """A line as it repeats from page to page: its numbers aside."""
    return _DIGITS.sub("#", _spaced(line))


def _edges(page: list[str]) -> list[int]:
    """The indexes of a page's first and last EDGE_LINES lines with text."""
    filled = [index for index, line in enumerate(page) if line.strip()]
    return filled[:EDGE_LINES] + filled[EDGE_LINES:][-EDGE_LINES:]


def _contents(page: list[str]) -> set[int]:
    """The lines of a table of contents: a run of contents lines ("2 Methods ...... 4"), with
    the heading above it ("Contents")."""
    found: set[int] = set()
    run: list[int] = []
    for index, line in enumerate([*page, ""]):
        if line and TOC_LINE.match(line.strip()):
            run.append(index)
            continue
        headed = bool(run) and run[0] > 0 and CONTENTS.match(page[run[0] - 1].strip())
        if len(run) >= TOC_RUN or (headed and len(run) >= TOC_RUN - 1):
            found.update(run)
            if headed:
                found.add(run[0] - 1)
        run = []
    return found
