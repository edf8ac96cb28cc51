"""A collection's sources in the console (real browser, real site on loopback): each source's
documents and last sync, a sync started from its button and followed in the collection's jobs,
and an answer's passages linking to the pages they came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import hash_collection, write_config
from tests.console.conftest import ask, expect
from tests.sources.conftest import web_block
from tests.support.site import Site, docs_site


@pytest.mark.slow
def test_a_source_synced_from_the_console_and_its_pages_cited(
    tmp_path: Path, hub_process, page
) -> None:
    with Site() as site:
        docs_site(site)
        block = web_block(site, url=None)
        config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None, sources=[block])})
        hub = hub_process(config)
        page.goto(hub.url + "/console/collections/docs")
        row = page.locator("#sources tr[data-source=help]")
        expect(row).to_contain_text("help (web)")
        expect(row.locator("[data-field=last]")).to_have_text("never")
        row.get_by_role("button", name="Sync now").click()
        job = page.locator("#jobs tr[data-kind=sync][data-status=done]")
        expect(job).to_contain_text("help: 54 indexed, 0 unchanged, 0 removed, 0 failed")
        expect(row.locator("[data-field=documents]")).to_have_text("54")
        expect(row.locator("[data-field=last]")).to_contain_text("54 listed, 54 indexed")

        ask(page, hub.url, "docs", "Which fact about topic 7 is recorded?")
        original = page.locator("#sources li.source a.original").first
        expect(original).to_have_attribute("href", f"{site.url}/docs/page-07.html")
