"""Web-page furniture (nav bar, cookie banner, footer) chunked apart from the page's content, so
the labeller hides it and a question's context holds the content alone: real engine, MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.readers import html_sections
from rag_api.indexing.sync import sync_collection
from rag_api.search.retrieval import SearchRequest, search
from tests.conftest import minilm_collection, write_config

NAV = (
    '<nav class="top"><ul><li><a href="/">Home</a></li><li><a href="/pricing">Pricing</a></li>'
    '<li><a href="/docs">Docs</a></li><li><a href="/contact">Contact</a></li></ul></nav>'
)
COOKIES = (
    '<div id="cookie-consent"><p>We use cookies to improve your experience and to measure '
    "traffic. By continuing to browse you accept our use of cookies.</p>"
    "<button>Accept all</button></div>"
)
FOOTER = (
    "<footer><p>Lumen Software Ltd, registered office: 4 Quay Street, Bristol BS1 4DB, "
    "registered in England no. 09876543.</p><p>© 2026 Lumen Software. All rights reserved.</p>"
    "</footer>"
)
FURNITURE = ("We use cookies", "registered office", "Home")
PAGES = {
    "refunds": (
        "Refund policy",
        "You can ask for a refund within 30 days of purchase. Refunds go back to the card "
        "that paid, within five working days of our approval.",
    ),
    "security": (
        "Security",
        "Lumen Notes encrypts data at rest with AES-256 and protects data in transit with "
        "TLS 1.3. Keys are rotated every ninety days.",
    ),
    "pricing": (
        "Pricing",
        "The Professional plan costs 12 euros per user per month, billed yearly; the Team plan "
        "costs 20 euros per user per month.",
    ),
    "export": (
        "Exporting notes",
        "Export a notebook as Markdown or PDF from the notebook menu; a whole workspace exports "
        "as a zip archive of Markdown files.",
    ),
    "sharing": (
        "Sharing",
        "Share a note with a link that anyone can read, or invite people by e-mail to edit it.",
    ),
    "offline": (
        "Offline mode",
        "Notes you opened in the last week stay available offline and sync when you reconnect.",
    ),
    "trial": (
        "Free trial",
        "The free trial lasts fourteen days and needs no card; it ends on its own.",
    ),
    "support": (
        "Support",
        "Our support team answers e-mail within one working day, Monday to Friday.",
    ),
}
QUESTIONS = {
    "How long is the refund window?": "30 days of purchase",
    "Which cipher protects data at rest in Lumen Notes?": "AES-256",
    "How much does the Professional plan cost?": "12 euros per user per month",
}


def page(title: str, text: str) -> str:
    return (
        f"<html><head><title>{title} | Lumen</title></head><body>"
        f"<header><a href='/'>Lumen</a>{NAV}</header>{COOKIES}"
        f"<main><h1>{title}</h1><p>{text}</p></main>{FOOTER}</body></html>"
    )


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    kb = tmp_path / "kb"
    kb.mkdir()
    for name, (title, text) in PAGES.items():
        (kb / f"{name}.html").write_text(page(title, text))
    entry = minilm_collection(kb, retrieval={"top_k": 3, "threshold": 0.0})
    return open_hub(make_settings(write_config(tmp_path / "c.yaml", {"site": entry}), "edge"))


@pytest.mark.slow
def test_questions_on_small_web_pages_get_contexts_with_the_answer_and_no_furniture(
    hub: Hub,
) -> None:
    site = hub.collection("site")
    sync_collection(site)
    for question, answer in QUESTIONS.items():
        context = [p.text for p in search(site, SearchRequest(question)).passages]
        assert any(answer in text for text in context), (question, context)
        leaked = [text for text in context if any(mark in text for mark in FURNITURE)]
        assert not leaked, (question, leaked)


def test_an_html_page_reads_as_its_content_then_each_piece_of_furniture() -> None:
    html = (
        "<html><body><header><h1>Refund policy</h1>"
        "<nav><a href='/'>Home</a> <a href='/help'>Help</a></nav></header>"
        "<div class='cookie-banner'>We use cookies.</div>"
        "<div role='navigation'>Docs › Billing</div>"
        "<main><article><header><p>Updated in May</p></header><p>Refunds within 30 days.</p>"
        "<aside>Tip: keep your receipt.</aside></article></main>"
        "<aside class='sidebar'>Popular: pricing</aside><footer>Registered office</footer>"
        "</body></html>"
    )
    texts = [section.text for section in html_sections(html)]
    assert texts == [
        "# Refund policy\n\nUpdated in May\n\nRefunds within 30 days.\n\nTip: keep your receipt.",
        "Home Help",
        "We use cookies.",
        "Docs › Billing",
        "Popular: pricing",
        "Registered office",
    ]


def test_a_page_without_furniture_is_one_section_as_before() -> None:
    sections = html_sections("<html><body><h1>Notes</h1><p>Plain page.</p></body></html>")
    assert [s.text for s in sections] == ["# Notes\n\nPlain page."]


@pytest.mark.parametrize(
    ("role", "furniture"),
    [
        ("banner", "Lumen · Log in"),
        ("contentinfo", "© 2026 Lumen Software. All rights reserved."),
        ("complementary", "Popular: pricing"),
        ("search", "Search the help centre"),
    ],
)
def test_a_div_with_a_furniture_role_is_furniture_like_its_tag(role: str, furniture: str) -> None:
    html = (
        f"<html><body><main><h1>Refunds</h1><p>Refunds within 30 days.</p></main>"
        f"<div role='{role}'>{furniture}</div></body></html>"
    )
    assert [s.text for s in html_sections(html)] == [
        "# Refunds\n\nRefunds within 30 days.",
        furniture,
    ]
    assert [s.text for s in html_sections(html, furniture=False)] == [
        "# Refunds\n\nRefunds within 30 days."
    ]  # a web source's page: the content alone, what a question's context gets
