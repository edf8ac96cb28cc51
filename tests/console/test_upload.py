"""Files in through the console: drop a .md and a .pdf, watch them index, ask, delete."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import hash_collection, minilm_collection, write_config
from tests.console.conftest import ADMIN, READER, ask, expect, kb_folder
from tests.indexing.test_formats import write_pdf

FICUS = "## Plant care\n\nThe ficus by the window is watered every Tuesday by the front desk.\n"
BOILER = ["The boiler in the basement is serviced each October.", "Its pressure stays at 1.5 bar."]


@pytest.mark.slow
def test_upload_a_markdown_and_a_pdf_ask_them_then_delete_one(
    tmp_path: Path, hub_process, page
) -> None:
    entry = minilm_collection(kb_folder(tmp_path))
    hub = hub_process(write_config(tmp_path / "collections.yaml", {"office": entry}))
    hub.wait_sources("office", ["faq.md", "handbook.md"])
    originals = tmp_path / "originals"
    originals.mkdir()
    (originals / "ficus.md").write_text(FICUS)
    write_pdf(originals / "boiler.pdf", BOILER)

    page.goto(hub.url + "/")
    page.locator("article[data-collection=office]").get_by_role(
        "link", name="Files and chunks"
    ).click()
    expect(page.locator("#files tbody tr")).to_have_count(2)
    page.set_input_files(
        "#file-input", [str(originals / "ficus.md"), str(originals / "boiler.pdf")]
    )
    for name, chunks in (("ficus.md", 1), ("boiler.pdf", 2)):
        upload = page.locator(f".upload[data-name='{name}']")
        expect(upload).to_have_attribute("data-status", "done")
        expect(upload.locator("progress")).to_have_attribute("value", "100")
        expect(upload).to_contain_text(f"{chunks} chunk(s)")
        row = page.locator(f"#files tr[data-path='{name}']")
        expect(row).to_have_attribute("data-state", "indexed")
        expect(row.locator("td[data-field=chunks]")).to_have_text(str(chunks))
    assert (tmp_path / "kb" / "ficus.md").read_text() == FICUS  # the original, in the kb folder

    page.locator("#files tr[data-path='boiler.pdf'] button.link").click()
    expect(page.locator("#chunks li")).to_have_count(2)
    expect(page.locator("#chunks li").nth(1).locator(".badge.where")).to_have_text("page 2")
    expect(page.locator("#chunks li").nth(1)).to_contain_text("1.5 bar")

    ask(page, hub.url, "office", "On which day is the ficus watered?")
    expect(page.locator("#sources li").first).to_have_attribute("data-source", "ficus.md")
    expect(page.locator("#answer")).to_contain_text("Tuesday")

    page.goto(hub.url + "/console/collections/office")
    page.locator("#files tr[data-path='ficus.md'] button.link").click()
    expect(page.locator("#chunks li")).to_have_count(1)
    row = page.locator("#files tr[data-path='ficus.md']")
    row.get_by_role("button", name="Delete").click()
    row.get_by_role("button", name="Really?").click()
    expect(page.locator("#notice")).to_contain_text("Deleted ficus.md and its chunks")
    expect(row).to_have_count(0)
    expect(page.locator("#chunks-status")).to_have_text("0 chunk(s)")
    expect(page.locator("#chunks li")).to_have_count(0)
    assert hub.sources("office") == ["boiler.pdf", "faq.md", "handbook.md"]
    assert not (tmp_path / "kb" / "ficus.md").exists()


@pytest.mark.slow
def test_a_reader_key_cannot_upload_or_delete_through_the_console(
    tmp_path: Path, hub_process, page
) -> None:
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection(kb_folder(tmp_path))}
    )
    hub = hub_process(config, RAG_API_KEY=READER, RAG_ADMIN_API_KEY=ADMIN)
    hub.wait_sources("docs", ["faq.md", "handbook.md"], READER)
    (tmp_path / "new.md").write_text("## New\n\nA new policy.\n")

    page.goto(hub.url + "/console/keys")
    page.fill("#key-input", READER)
    page.click("#key-form button[type=submit]")
    page.goto(hub.url + "/console/collections/docs")
    expect(page.locator("#files tbody tr")).to_have_count(2)  # a reader sees
    page.set_input_files("#file-input", str(tmp_path / "new.md"))
    upload = page.locator(".upload[data-name='new.md']")
    expect(upload).to_have_attribute("data-status", "refused")
    expect(upload).to_contain_text("needs the admin key")
    row = page.locator("#files tr[data-path='faq.md']")
    row.get_by_role("button", name="Delete").click()
    row.get_by_role("button", name="Really?").click()
    expect(page.locator("#notice")).to_contain_text("needs the admin key")
    assert not (tmp_path / "kb" / "new.md").exists()
    assert hub.sources("docs", READER) == ["faq.md", "handbook.md"]
