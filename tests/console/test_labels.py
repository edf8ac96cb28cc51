"""The console shows labels (headless Debian chromium against a live hub in this process): each
kb file's quality summary, each chunk's type, quality, reasons and OCR confidence, and an
answer's sources with theirs; asking can include what the defaults leave out."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.indexing.sync import sync_collection
from rag_api.store import Selector
from tests.conftest import hash_collection, write_config
from tests.console.conftest import ask, expect, kb_folder
from tests.support.labels import label, label_file, labels, unlabel

SCAN = "# Scan\n\n" + " ".join(f"Parking page {i}, scanned and read badly." for i in range(30))


@pytest.mark.slow
def test_files_chunks_and_sources_show_their_labels(
    tmp_path: Path, make_settings, serve, page
) -> None:
    kb = kb_folder(tmp_path)
    (kb / "scan.md").write_text(SCAN)
    entry = hash_collection(kb, retrieval={"threshold": -1.0, "top_k": 10})
    server = serve(make_settings(write_config(tmp_path / "collections.yaml", {"docs": entry})))
    docs = server.hub.collection("docs")
    sync_collection(docs)
    scan = label_file(docs, "scan.md", 0)
    assert scan >= 3
    label_file(docs, "scan.md", scan - 1, "broken_extraction", "low_ocr_confidence")
    ocr = {"metadata": {"ocr": True, "page": 2, "ocr_confidence": 0.42}}
    label(docs, Selector(files=("scan.md",)), ocr)
    label(docs, Selector(files=("handbook.md",)), labels("prose", 0.95))
    unlabel(docs, Selector(files=("faq.md",)))  # as if written before labels: no summary

    page.goto(server.url + "/console/collections/docs")
    summary = page.locator("#files tr[data-path='scan.md'] [data-field=quality]")
    expect(summary).to_contain_text(f"{scan - 1} of {scan} chunks below quality 0.3")
    expect(summary).to_contain_text("broken_extraction, low_ocr_confidence")
    expect(page.locator("#files tr[data-path='faq.md'] [data-field=quality]")).to_have_count(0)

    page.get_by_role("button", name="scan.md").click()
    first = page.locator("#chunks li.chunk").first
    expect(first.locator("[data-label=type]")).to_have_text("prose")
    expect(first.locator("[data-label=quality]")).to_have_text(
        "quality 0.10 (broken_extraction, low_ocr_confidence)"
    )
    expect(first.locator("[data-label=ocr]")).to_have_text("OCR 0.42")
    expect(first.locator(".badge.where")).to_have_text("page 2")

    ask(page, server.url, "docs", "Where do visitors park?")
    handbook = page.locator("#sources li[data-source='handbook.md']")
    expect(handbook.locator("[data-label=type]")).to_have_text("prose")
    expect(handbook.locator("[data-label=quality]")).to_have_text("quality 0.95")
    expect(page.locator("#sources li[data-source='scan.md']")).to_have_count(
        1
    )  # its one good chunk
    page.locator("details summary").click()
    page.check("#ask-all-labels")
    page.click("#ask-button")
    expect(page.locator("#answer-meta")).to_have_attribute("data-done", "true")
    expect(page.locator("#sources li[data-source='scan.md']")).to_have_count(scan)
