"""Format readers: a file's bytes become sections of text (markdown where the format has structure),
each with where it came from (`page`, `sheet`, `rows`, `slide`); optional formats need an extra.

HTML goes through `markdownify` (headings, lists and tables as markdown). Compared on the shipped
kb/docs/security-whitepaper.html and a saved page with a roster table: `html2text` breaks a table
row at every `<br>` inside a cell and drops the leading `|`; `trafilatura` removes boilerplate but
also drops headings and bullet lists (the whitepaper lost its key-rotation list) and, on a small
page, emits every cell on a line of its own. markdownify keeps everything visible, in order;
the page's furniture, marked by its own elements (`<nav>`, `<header>`, `<footer>`, `<aside>`, their
ARIA roles, a cookie or consent banner), comes after the content in sections of its own.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class UnreadableFile(Exception):
    """A file that cannot be turned into text; the message says why."""


@dataclass(slots=True)
class Section:
    """Text from one place in a file; `whole` sections are chunks already (rows under a header)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    markdown: bool = True
    whole: bool = False
    title: str | None = None  # the document's title, where its layout shows one (a PDF's)


def _extra(module: str, label: str, extra: str) -> Any:
    """The optional package behind a format, or UnreadableFile naming the extra to install."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise UnreadableFile(
            f"{label} support needs the '{extra}' extra: pip install 'rag-hub[{extra}]'"
        ) from None


# ---- tables: rows under their header, never separated from it -------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, dt.datetime) and value.time() == dt.time():
        value = value.date()
    text = value.isoformat() if isinstance(value, dt.date) else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def markdown_table(rows: list[list[Any]]) -> str:
    """A markdown table, the first row as its header."""
    if not rows:
        return ""
    lines = [markdown_row(rows[0]), "|" + " --- |" * len(rows[0])]
    return "\n".join(lines + [markdown_row(r) for r in rows[1:]])


def row_groups(
    numbered: Iterable[tuple[int, list[Any]]], size: int, title: str = "", **where: Any
) -> list[Section]:
    """Rows (with their 1-based row number, the header first) packed into sections of about
    `size` characters, each repeating the header so no row is read apart from its column names."""
    rows = [(n, r) for n, r in numbered if any(_cell(c) for c in r)]
    if not rows:
        return []
    (_, header), body = rows[0], rows[1:]
    width = max(len(r) for _, r in rows)
    while width > 1 and not any(_cell(r[width - 1]) for _, r in rows if len(r) >= width):
        width -= 1  # trailing empty columns (a sheet's formatting) carry nothing

    def padded(row: list[Any]) -> list[Any]:
        return (list(row) + [None] * width)[:width]

    lead = (f"# {title}\n\n" if title else "") + markdown_table([padded(header)])
    sections: list[Section] = []
    group: list[tuple[int, str]] = []
    length = len(lead)
    for number, row in body or [(rows[0][0], [])]:
        line = markdown_row(padded(row)) if row else ""
        if group and length + 1 + len(line) > size:
            sections.append(_rows_section(lead, group, where))
            group, length = [], len(lead)
        group.append((number, line))
        length += 1 + len(line)
    sections.append(_rows_section(lead, group, where))
    return sections


def _rows_section(lead: str, group: list[tuple[int, str]], where: dict[str, Any]) -> Section:
    text = "\n".join([lead] + [line for _, line in group if line])
    first, last = group[0][0], group[-1][0]
    rows = str(first) if first == last else f"{first}-{last}"
    return Section(text, {**where, "rows": rows}, whole=True)


def read_delimited(text: str, size: int, tab: bool) -> list[Section]:
    """CSV (delimiter sniffed among , ; | and tab) or TSV rows, grouped under their header."""
    if tab:
        dialect: Any = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:16384], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), dialect))
    except csv.Error as exc:
        raise UnreadableFile(f"unreadable CSV: {exc}") from exc
    return row_groups(enumerate(rows, 1), size)


def read_xlsx(path: Path, size: int) -> list[Section]:
    """Each worksheet's rows (computed values, not formulas), grouped under the sheet's header."""
    openpyxl = _extra("openpyxl", "XLSX", "xlsx")
    try:
        book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except Exception as exc:  # zip, XML and openpyxl's own errors on damaged files
        raise UnreadableFile(f"unreadable XLSX: {exc}") from exc
    try:
        sections: list[Section] = []
        for sheet in book.worksheets:
            rows = ((n, list(r)) for n, r in enumerate(sheet.iter_rows(values_only=True), 1))
            sections += row_groups(rows, size, sheet.title, sheet=sheet.title)
        return sections
    finally:
        book.close()


# ---- documents ---------------------------------------------------------------------------------


def read_docx(path: Path) -> list[Section]:
    """Paragraphs and tables in document order; `Heading N` (and Title) paragraphs as headings."""
    docx = _extra("docx", "DOCX", "docx")
    try:
        document = docx.Document(str(path))
        blocks = []
        for block in document.iter_inner_content():
            if hasattr(block, "rows"):  # a Table
                blocks.append(markdown_table([[c.text for c in row.cells] for row in block.rows]))
            elif block.text.strip():
                blocks.append(_heading_prefix(block) + " ".join(block.text.split()))
    except Exception as exc:
        raise UnreadableFile(f"unreadable DOCX: {exc}") from exc
    return [Section("\n\n".join(blocks))]


def _heading_prefix(paragraph: Any) -> str:
    style = paragraph.style.name if paragraph.style is not None else ""
    level = style.removeprefix("Heading ").strip()
    if style.startswith("Heading ") and level.isdigit():
        return "#" * min(int(level), 6) + " "
    return "# " if style == "Title" else ""


def read_pptx(path: Path) -> list[Section]:
    """One section per slide: its title as a heading, the text and tables of its shapes, notes."""
    pptx = _extra("pptx", "PPTX", "pptx")
    try:
        presentation = pptx.Presentation(str(path))
        sections = []
        for number, slide in enumerate(presentation.slides, 1):
            title = slide.shapes.title
            parts = [f"# {' '.join(title.text_frame.text.split())}"] if _has_text(title) else []
            parts += [t for t in _shape_texts(slide.shapes, skip=title) if t]
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = slide.notes_slide.notes_text_frame.text.strip()
                parts += [f"Notes: {notes}"] if notes else []
            if parts:
                sections.append(Section("\n\n".join(parts), {"slide": number}))
        return sections
    except Exception as exc:
        raise UnreadableFile(f"unreadable PPTX: {exc}") from exc


def _has_text(shape: Any) -> bool:
    return shape is not None and shape.has_text_frame and bool(shape.text_frame.text.strip())


def _shape_texts(shapes: Iterable[Any], skip: Any) -> Iterator[str]:
    for shape in shapes:
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        if getattr(shape, "shapes", None) is not None:  # a group: its members in order
            yield from _shape_texts(shape.shapes, skip)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = shape.table.rows
            yield markdown_table([[c.text for c in row.cells] for row in rows])
        elif _has_text(shape):
            yield shape.text_frame.text.strip()


def html_to_text(html: str) -> str:
    """Visible text of an HTML page as markdown: headings, lists and `| a | b |` table rows kept;
    scripts, styles and link targets dropped."""
    return _markdown(_page_soup(html))


def html_sections(html: str, furniture: bool = True) -> list[Section]:
    """An HTML page as its content and then each piece of its furniture (navigation, the page's
    header, footer and sidebars, a cookie or consent banner), sections of their own as a PDF
    page's furniture is, so the repetition census can label it without hiding the content
    (without `furniture`, the content alone: a web source's pages). A page-level header's `<h1>`
    is the page's title: it stays with the content."""
    soup = _page_soup(html)
    pieces = _furniture(soup)
    titles = [h1 for piece in pieces if _is_page_header(piece) for h1 in piece.find_all("h1")]
    for piece in pieces:
        piece.extract()
    home = soup.body or soup
    for h1 in reversed(titles):
        home.insert(0, h1.extract())
    texts = [_markdown(soup)] + [_markdown(piece) for piece in pieces if furniture]
    return [Section(text) for text in texts if text]


FURNITURE_TAGS = {"nav", "header", "footer", "aside"}
FURNITURE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search"}
# inside these a header, footer or aside is the content's own (an article's byline, a callout)
CONTENT_TAGS = ["main", "article", "section"]
_CONSENT = re.compile(r"cookie|consent|gdpr", re.I)
BANNER_CHARS = 2000  # longer and a "cookie" element is a page about cookies, not a banner


def _page_soup(html: str) -> Any:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["head", "script", "style", "noscript", "template"]):
        tag.decompose()
    return soup


def _furniture(soup: Any) -> list[Any]:
    """The outermost furniture elements of a page, in document order."""
    found: list[Any] = []
    chosen: set[int] = set()
    for tag in soup.find_all(True):
        if any(id(parent) in chosen for parent in tag.parents):
            continue
        if _is_furniture(tag):
            found.append(tag)
            chosen.add(id(tag))
    return found


def _is_furniture(tag: Any) -> bool:
    role = str(tag.get("role") or "").lower()
    if tag.name == "nav" or role == "navigation":
        return True
    if tag.name in FURNITURE_TAGS or role in FURNITURE_ROLES:
        return tag.find_parent(CONTENT_TAGS) is None and role != "main"
    if tag.name in ("html", "body", "main", "article"):
        return False
    marks = " ".join(
        [str(tag.get("id") or ""), *tag.get("class", []), str(tag.get("aria-label") or "")]
    )
    return bool(_CONSENT.search(marks)) and len(tag.get_text()) < BANNER_CHARS


def _is_page_header(tag: Any) -> bool:
    return tag.name == "header" or str(tag.get("role") or "").lower() == "banner"


def _markdown(node: Any) -> str:
    converter = _converter_class()(
        heading_style="ATX",
        bullets="*",
        strip=["a", "img", "b", "strong", "em", "i", "u"],  # the words stay, the markup goes
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
        table_infer_header=True,
    )
    text = converter.convert_soup(node)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@functools.cache
def _converter_class() -> type:
    """markdownify's converter, escaping a `|` inside a cell so it cannot split the row."""
    from markdownify import MarkdownConverter

    class CellSafeConverter(MarkdownConverter):
        def convert_td(self, el: Any, text: str, parent_tags: Any) -> str:
            return super().convert_td(el, text.replace("|", "\\|"), parent_tags)

        def convert_th(self, el: Any, text: str, parent_tags: Any) -> str:
            return super().convert_th(el, text.replace("|", "\\|"), parent_tags)

    return CellSafeConverter
