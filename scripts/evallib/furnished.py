"""Documents dressed as their readers meet them, for bench_labels: web pages with a menu, a cookie
banner, breadcrumbs and a footer (whole, or only their first sentences: a page that is one chunk
with its furniture), and PDF reports with a contents page, a running header and page numbers."""

from __future__ import annotations

import re
from pathlib import Path

from scripts.evallib import Dataset

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

NAV = ["Home", "Journals", "Topics", "Submit a paper", "About us", "Contact", "Log in"]
COOKIES = (
    "We use cookies to give you the best experience on our website and to measure traffic. By "
    "continuing to browse, you agree to our use of cookies. Cookie settings · Accept all"
)
FOOTER = [
    "Open Science Reports · 1200 Research Park Drive, Cambridge, MA 02142",
    "© 2024 Open Science Reports. All rights reserved.",
    "Privacy policy · Terms of use · Cookie settings · Accessibility",
    "Follow us on Mastodon, LinkedIn and RSS",
]
RUNNING_HEADER = "Open Science Reports - Technical Report Series, Vol. 12"
SMALL_CHARS = 400  # html-small: a page's own text, cut after the sentence that reaches this
SECTIONS = ["Abstract", "Background", "Methods", "Results", "Discussion", "References"]


def html_page(title: str, text: str) -> str:
    nav = "".join(f'<li><a href="/{n.lower()}">{n}</a></li>' for n in NAV)
    footer = "".join(f"<p>{line}</p>" for line in FOOTER)
    paragraphs = "".join(f"<p>{p}</p>" for p in text.split("\n") if p.strip())
    return (
        f"<html><head><title>{title}</title></head><body>"
        f'<header><a href="/">Open Science Reports</a><nav><ul>{nav}</ul></nav></header>'
        f'<div class="cookies"><p>{COOKIES}</p></div>'
        f'<div class="breadcrumbs">Home › Articles › Open access</div>'
        f"<main><h1>{title}</h1>{paragraphs}</main><footer>{footer}</footer></body></html>"
    )


def pdf_report(title: str, text: str, path: Path) -> None:
    from fpdf import FPDF  # the bench extra

    class Report(FPDF):
        def header(self) -> None:
            self.set_font("dejavu", size=8)
            self.cell(0, 8, RUNNING_HEADER, align="C", new_x="LMARGIN", new_y="NEXT")

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("dejavu", size=8)
            self.cell(0, 10, f"Page {self.page_no()} of {{nb}}", align="C")

    pdf = Report()
    pdf.add_font("dejavu", fname=str(FONT))
    pdf.add_page()
    pdf.set_font("dejavu", size=16)
    pdf.multi_cell(0, 9, title)
    pdf.ln(6)
    pdf.set_font("dejavu", size=12)
    pdf.cell(0, 8, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("dejavu", size=10)
    for number, section in enumerate(SECTIONS, 1):
        pdf.cell(
            0, 6, f"{number} {section} {'.' * 60} {1 + number // 3}", new_x="LMARGIN", new_y="NEXT"
        )
    pdf.add_page()
    pdf.set_font("dejavu", size=12)
    pdf.cell(0, 8, f"1 {SECTIONS[0]}", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("dejavu", size=10)
    for paragraph in (p for p in text.split("\n") if p.strip()):
        pdf.multi_cell(0, 5, paragraph)
        pdf.ln(2)
    pdf.output(str(path))


def write_corpus(kind: str, dataset: Dataset, root: Path) -> dict[str, str]:
    """The corpus as kb files; returns each document's own text (title and body) by file."""
    root.mkdir(parents=True, exist_ok=True)
    own = {}
    for doc_id, doc in dataset.corpus.items():
        name = f"{doc_id}.{kind.removesuffix('-small')}"
        text = small(doc.text) if kind == "html-small" else doc.text
        if kind.startswith("html"):
            (root / name).write_text(html_page(doc.title, text))
        else:
            pdf_report(doc.title, text, root / name)
        own[name] = normalised(f"{doc.title}\n{text}")
    return own


def small(text: str) -> str:
    """The text's first sentences, up to the one that reaches SMALL_CHARS characters."""
    cut = re.search(r"[.!?](\s|$)", text[SMALL_CHARS:])
    return text if cut is None else text[: SMALL_CHARS + cut.end()].strip()


def normalised(text: str) -> str:
    return " ".join(re.sub(r"[#*|>\-]+", " ", text.lower()).split())
