"""The console in a real browser (Debian chromium) against a real `rag-hub serve --watch`."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import hash_collection, minilm_collection, write_config
from tests.console.conftest import ADMIN, READER, ask, expect, kb_folder
from tests.support.fakes import FakeOllama


@pytest.mark.slow
def test_overview_then_ask_streams_an_answer_and_shows_why_each_source(
    tmp_path: Path, hub_process, page
) -> None:
    entry = minilm_collection(kb_folder(tmp_path), description="Company policies")
    hub = hub_process(write_config(tmp_path / "collections.yaml", {"policies": entry}))
    hub.wait_sources("policies", ["faq.md", "handbook.md"])

    page.goto(hub.url + "/")
    card = page.locator("article[data-collection=policies]")
    expect(card.locator("dd[data-field=chunks]")).to_have_text("2")
    expect(card.locator("dd[data-field=files]")).to_have_text("2")
    expect(card).to_contain_text("Company policies")
    expect(card.locator("dd[data-field=model]")).to_contain_text("all-MiniLM-L6-v2 (384 d)")
    expect(card.locator("dd[data-field=watcher]")).to_contain_text("watching")
    expect(card.locator("dd[data-field=last-check]")).to_have_text("never run")

    card.get_by_role("link", name="Ask").click()
    page.fill("#question", "Where do visitors park their car?")
    page.select_option("#ask-mode", "hybrid")
    page.fill("#ask-top-k", "2")
    page.click("#ask-button")
    expect(page.locator("#answer-meta")).to_have_attribute("data-done", "true")
    expect(page.locator("#answer")).to_contain_text("level one")
    first = page.locator("#sources li").first
    expect(first).to_have_attribute("data-source", "handbook.md")
    expect(first.locator(".scores")).to_contain_text(re.compile(r"fused \d\.\d{3}"))
    expect(first.locator(".scores")).to_contain_text(re.compile(r"dense \d\.\d{3} \(#1\)"))
    expect(first.locator(".scores")).to_contain_text(re.compile(r"sparse \d\.\d{3} \(#1\)"))
    expect(first.locator(".text")).to_contain_text("visitors use level one")
    expect(page.locator("#no-evidence")).to_be_hidden()

    # a filter nothing matches: no passage, so the fixed answer, shown as such
    page.locator("details summary").click()
    page.fill("#ask-source-prefix", "nowhere/")
    page.click("#ask-button")
    expect(page.locator("#no-evidence")).to_be_visible()
    expect(page.locator("#sources li")).to_have_count(0)
    expect(page.locator("#answer-meta")).to_contain_text("no answer generated")


@pytest.mark.slow
def test_with_keys_the_console_reads_with_a_reader_key_and_writes_only_with_the_admin_key(
    tmp_path: Path, hub_process, page
) -> None:
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection(kb_folder(tmp_path))}
    )
    hub = hub_process(config, RAG_API_KEY=READER, RAG_ADMIN_API_KEY=ADMIN)
    with hub.client(ADMIN) as admin:
        added = admin.post(
            "/v1/rag/upsert/document",
            json={"source": "crm/customer-7", "text": "Customer 7 is on the annual plan."},
        )
        assert added.status_code == 200, added.text
    hub.wait_sources("docs", ["crm/customer-7", "faq.md", "handbook.md"], READER)

    page.goto(hub.url + "/")  # no key: the shell only, and why
    expect(page.locator("#notice")).to_contain_text("This hub needs a key")
    expect(page.locator("article")).to_have_count(0)
    assert "docs" not in page.content().split("<main>")[1]

    page.get_by_role("link", name="Enter a key").click()
    page.fill("#key-input", READER)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-result")).to_contain_text("Reader key")
    page.goto(hub.url + "/console/collections/docs")
    row = page.locator("#api-sources tr[data-source='crm/customer-7']")
    row.get_by_role("button", name="Remove").click()
    row.get_by_role("button", name="Really?").click()  # the second click confirms
    expect(page.locator("#notice")).to_contain_text("needs the admin key")
    expect(page.locator("#notice")).to_contain_text("403 FORBIDDEN")
    page.reload()
    expect(row).to_be_visible()  # refused: still there

    page.goto(hub.url + "/console/keys")
    page.fill("#key-input", ADMIN)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-result")).to_contain_text("Admin key")
    page.goto(hub.url + "/console/collections/docs")
    row.get_by_role("button", name="crm/customer-7").click()  # its chunks, editable
    chunk = page.locator("#chunks li.chunk")
    expect(chunk.locator(".badge.api")).to_have_text("fed through the API")
    expect(chunk.locator(".chunk-head strong")).to_have_text("Chunk 1 of 1")  # one label
    chunk.get_by_role("button", name="Edit").click()
    chunk.locator(".edit-text").fill("Customer 7 moved to the monthly plan.")
    chunk.locator(".edit-metadata").fill('{"plan": "monthly"}')
    chunk.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("Saved chunk 1 of 1.")
    expect(chunk.locator(".text")).to_have_text("Customer 7 moved to the monthly plan.")
    expect(chunk.locator(".badge", has_text="plan: monthly")).to_be_visible()
    row.get_by_role("button", name="Remove").click()
    row.get_by_role("button", name="Really?").click()
    expect(page.locator("#notice")).to_contain_text("Removed the chunks of crm/customer-7")
    expect(row).to_have_count(0)
    assert hub.sources("docs", READER) == ["faq.md", "handbook.md"]


MARKDOWN = "**Cerrar caja** a las 18:00.\n- uno `<b>dos</b>`\n- *tres* <img src=x onerror=alert(1)>"


@pytest.mark.slow
def test_an_answer_s_markdown_is_rendered_safely_and_every_page_has_its_icon(
    tmp_path: Path, hub_process, page
) -> None:
    with FakeOllama() as ollama:
        ollama.reply = MARKDOWN
        entry = hash_collection(
            kb_folder(tmp_path), llm={"provider": "ollama", "model": "llama3.2"}
        )
        hub = hub_process(
            write_config(tmp_path / "collections.yaml", {"docs": entry}), RAG_OLLAMA_URL=ollama.url
        )
        hub.wait_sources("docs", ["faq.md", "handbook.md"])
        missing: list[str] = []
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

        ask(page, hub.url, "docs", "Where do visitors park their car?")
        answer = page.locator("#answer")
        expect(answer.locator("strong")).to_have_text("Cerrar caja")
        expect(answer.locator("em")).to_have_text("tres")
        expect(answer.locator("code")).to_have_text("<b>dos</b>")  # markup in it stays text
        expect(answer).to_contain_text("• uno")
        expect(answer).not_to_contain_text("**")
        expect(answer.locator("b, img")).to_have_count(0)

    page.goto(hub.url + "/console/collections/docs")
    expect(page.locator("#drop-zone")).not_to_contain_text("choose files")  # the native button
    page.goto(hub.url + "/docs")
    expect(page.get_by_role("link", name="← Back to the console")).to_have_attribute("href", "/")
    icon = page.request.get(hub.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert missing == []


@pytest.mark.slow
def test_a_citation_link_opens_its_passage_without_a_key_and_nothing_else(
    tmp_path: Path, hub_process, browser, page
) -> None:
    kb = kb_folder(tmp_path)
    parking = [f"Level {n} of the garage is for {who}." for n, who in enumerate(WHO, 1)]
    (kb / "handbook.md").write_text("## Parking\n\n" + "\n\n".join(parking) + "\n")
    entry = hash_collection(kb, chunking={"size": 64, "overlap": 0})  # a chunk per level
    config = write_config(tmp_path / "collections.yaml", {"policies": entry})
    hub = hub_process(config, RAG_API_KEY=READER, RAG_ADMIN_API_KEY=ADMIN, RAG_LINK_TTL="12s")
    hub.wait_sources("policies", ["faq.md", "handbook.md"], READER)
    body = {"model": "policies", "messages": [{"role": "user", "content": "Who parks on level 3?"}]}
    with hub.client(READER) as http:
        reply = http.post("/v1/chat/completions", json=body).json()
        made = time.monotonic()
    links = dict(
        re.findall(
            r"\[(\d+)\] \[handbook\.md\]\((\S+?)\)", reply["choices"][0]["message"]["content"]
        )
    )
    number, link = next(
        (int(n), url)
        for n, url in links.items()
        if "Level 3" in reply["sources"][int(n) - 1]["text"]
    )
    cited = reply["sources"][number - 1]
    assert cited["chunk_index"] > 0  # not the document's first chunk

    stranger = browser.new_context()  # another tab's, another browser's: no key at all
    tab = stranger.new_page()
    tab.goto(link)
    expect(tab.locator("#passage-text")).to_have_text(cited["text"])
    expect(tab.locator("#passage")).to_have_attribute("data-id", cited["id"])
    expect(tab.locator("#passage-before")).to_contain_text("Level 2")  # its neighbours
    expect(tab.locator("#passage-after")).to_contain_text("Level 4")
    javascript_off = httpx.get(link)  # curl: the same passage, server-rendered
    assert "Level 3 of the garage" in javascript_off.text

    altered = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    tab.goto(altered)
    expect(tab.locator("#refusal")).to_have_attribute("data-code", "LINK_INVALID")
    expect(tab.locator("#passage")).to_have_count(0)
    time.sleep(max(0.0, 13 - (time.monotonic() - made)))
    tab.goto(link)
    expect(tab.locator("#refusal")).to_have_attribute("data-code", "LINK_EXPIRED")
    assert "Level 3" not in tab.content()
    stranger.close()

    page.goto(hub.url + "/console/keys")  # the console, with a key, marks the cited chunk
    page.fill("#key-input", READER)
    page.click("#key-form button[type=submit]")
    page.goto(
        hub.url + f"/console/collections/policies?source=handbook.md#chunk-{cited['chunk_index']}"
    )
    marked = page.locator("#chunks li.cited")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("Level 3 of the garage")


WHO = ["staff", "visitors", "delivery vans", "bicycles", "electric cars"]


@pytest.mark.slow
def test_ask_waits_for_the_list_of_collections(tmp_path: Path, hub_process, page) -> None:
    """A question asked before the page had its collections went to POST /query/ (a 404)."""
    hub = hub_process(
        write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb_folder(tmp_path))})
    )
    hub.wait_sources("docs", ["faq.md", "handbook.md"])
    held: list = []
    page.route("**/v1/overview", lambda route: held.append(route))
    page.goto(f"{hub.url}/console/ask?collection=docs")
    page.fill("#question", "Where do visitors park their car?")
    expect(page.locator("#ask-button")).to_be_disabled()  # the overview is held back
    page.wait_for_timeout(200)
    held[0].continue_()
    expect(page.locator("#ask-button")).to_be_enabled()
    page.click("#ask-button")
    expect(page.locator("#answer-meta")).to_have_attribute("data-done", "true")
    expect(page.locator("#answer")).not_to_be_empty()
