"""The web source against a real site on loopback (tests/support/site.py): exactly the allowed
pages with their URLs and without their furniture, re-syncs that cost a 304 or nothing, edits,
additions and removals with evidence, and a site that goes down removing nothing."""

from __future__ import annotations

import time

import pytest

from rag_api.errors import SourceUnavailable
from tests.conftest import LOCAL_ENGINES
from tests.sources.conftest import documents, sync, web_block
from tests.support.site import Page, article, html_page

PAGES = 52


def expected_names(site) -> set[str]:
    pages = {f"{site.url}/docs/page-{n:02}.html" for n in range(PAGES)}
    return {f"help:{url}" for url in pages | {f"{site.url}/", f"{site.url}/docs/notes.txt"}}


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_the_first_sync_indexes_exactly_the_allowed_pages_with_their_urls(
    engine, site, source_hub
) -> None:
    hub = source_hub(web_block(site), engine=engine)
    report = sync(hub)
    held = documents(hub)
    assert set(held) == expected_names(site)  # no private page, no second URL of one page
    assert report.indexed == len(held) and not report.failed and report.incomplete is None
    for name, chunks in held.items():
        assert {chunk.url for chunk in chunks} == {name.removeprefix("help:")}
    page = held[f"help:{site.url}/docs/page-03.html"]
    assert page[0].title == "Page 3"
    assert "Fact 3-0 is recorded" in " ".join(c.text for c in page)
    every_text = " ".join(c.text for chunks in held.values() for c in chunks)
    for furniture in ("cookies", "Site navigation", "All rights reserved"):
        assert furniture not in every_text
    assert not any(path.startswith("/private/") for path, _ in site.answers)  # robots.txt
    assert {h["user-agent"].split("/")[0] for h in site.headers} == {"rag-hub"}
    assert not any("authorization" in h or "cookie" in h for h in site.headers)


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_an_unchanged_resync_downloads_no_page_and_embeds_nothing(engine, site, source_hub) -> None:
    hub = source_hub(web_block(site), engine=engine)
    first = sync(hub)
    before = site.answers.copy()
    again = sync(hub)
    asked = site.answers - before
    assert not [path for path, status in asked if status == 200]  # no body at all
    # the sitemap's pages, their lastmod unmoved, are not asked for at all; the rest is a 304
    # (robots.txt, the sitemap, the two URLs that lead to a page of another name)
    assert set(asked) == {
        ("/robots.txt", 304),
        ("/sitemap.xml", 304),
        ("/old.html", 301),
        ("/docs/page-01.html", 304),
        ("/docs/page-03.html?ref=nav", 304),
    }
    assert again.bytes == 0 and again.indexed == 0 and again.stats.embedded == 0
    assert again.unchanged == again.listed == first.listed
    assert documents(hub).keys() == expected_names(site)


def test_a_conditional_request_costs_a_304_without_a_sitemap(site, source_hub) -> None:
    hub = source_hub(web_block(site, sitemap=None))
    sync(hub)
    bodies = site.bodies("/")
    again = sync(hub)
    assert site.bodies("/") == bodies and again.unchanged == again.listed == PAGES + 2
    conditional = [h for h in site.headers if "if-none-match" in h]
    assert len(conditional) >= PAGES


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_two_edited_one_removed_one_added_change_exactly_those(engine, site, source_hub) -> None:
    hub = source_hub(web_block(site, url=None), engine=engine)  # the sitemap's pages
    sync(hub)
    before = documents(hub)
    bodies = site.bodies("/docs/")
    site.edit("/docs/page-04.html", article(4, edit=1))
    site.edit("/docs/page-05.html", article(5, edit=1))
    del site.pages["/docs/page-10.html"]
    site.add("/docs/page-99.html", Page(html_page("Page 99", article(99))))

    report = sync(hub)
    after = documents(hub)
    base = f"help:{site.url}/docs/page-"
    changed = {f"{base}04.html", f"{base}05.html", f"{base}99.html"}
    assert site.bodies("/docs/") - bodies == 3  # the pages; the sitemap changed too
    assert report.indexed == 3 and report.removed == [f"{site.url}/docs/page-10.html"]
    assert after.keys() == (before.keys() - {f"{base}10.html"}) | {f"{base}99.html"}
    for name in after.keys() - changed:
        assert [c.raw for c in after[name]] == [c.raw for c in before[name]], name
    assert report.stats.embedded == sum(len(after[name]) for name in changed)
    assert "Fact 4-1 is recorded" in " ".join(c.text for c in after[f"{base}04.html"])


def test_a_page_that_answers_404_is_removed_the_second_time(site, source_hub) -> None:
    hub = source_hub(web_block(site, sitemap=None))  # a crawl: every page still links to it
    sync(hub)
    gone = f"{site.url}/docs/page-07.html"
    del site.pages["/docs/page-07.html"]
    once = sync(hub)
    assert "404" in once.failed[gone] and not once.removed
    assert f"help:{gone}" in documents(hub)
    twice = sync(hub)
    assert twice.removed == [gone]
    assert f"help:{gone}" not in documents(hub)


@pytest.mark.slow
def test_a_site_that_goes_down_mid_listing_removes_nothing(site, source_hub) -> None:
    hub = source_hub(web_block(site, sitemap=None, concurrency=8))
    sync(hub)
    before = documents(hub)
    site.down_after = 35  # robots.txt, the home page and most pages, then nothing answers
    report = sync(hub)
    assert "could not be fetched" in report.incomplete
    assert report.held is None  # not the mass-removal guard: the walk's end is no evidence
    assert not report.removed and report.stats.deleted == 0
    assert documents(hub) == before


@pytest.mark.slow
def test_a_sitemap_that_cannot_be_read_fails_the_sync_and_removes_nothing(site, source_hub) -> None:
    hub = source_hub(web_block(site, url=None))
    sync(hub)
    before = documents(hub)
    site.down_after = 0
    with pytest.raises(SourceUnavailable, match="web source 'help'"):
        sync(hub)
    assert documents(hub) == before
    status = hub.sources.status("docs")["sources"][0]
    assert status["failures"] == 1 and status["last"]["status"] == "failed"
    assert status["documents"] == len(before)


def test_private_addresses_are_refused_unless_allowed(site, source_hub) -> None:
    hub = source_hub(web_block(site, allow_private=False))
    with pytest.raises(SourceUnavailable, match="loopback"):
        sync(hub)
    assert not site.headers  # not one request reached it
    assert documents(hub) == {}


def test_only_the_named_hosts_are_fetched_redirects_included(site, source_hub) -> None:
    elsewhere = f"http://localhost:{site.server.server_port}/docs/page-01.html"  # another name
    site.redirects["/docs/page-02.html"] = elsewhere
    hub = source_hub(web_block(site, sitemap=None))
    report = sync(hub)
    assert f"help:{site.url}/docs/page-02.html" not in documents(hub)
    assert not any(h.get("host", "").startswith("localhost") for h in site.headers)
    assert report.failed == {}  # a page never held: not a failure of a held one


def test_429_and_503_are_retried_as_the_server_asks(site, source_hub) -> None:
    page = "/docs/page-05.html"
    site.scripted[page] = [(429, {"Retry-After": "1"}), (503, {})]
    hub = source_hub(web_block(site, url=None))
    started = time.monotonic()
    report = sync(hub)
    assert f"help:{site.url}{page}" in documents(hub) and not report.failed
    assert time.monotonic() - started >= 1.0  # Retry-After: 1 honoured
    assert site.answers[(page, 429)] == 1 and site.answers[(page, 503)] == 1


def test_a_page_over_the_size_cap_or_redirected_in_a_loop_is_not_read(site, source_hub) -> None:
    site.add("/docs/big.html", Page(html_page("Big", article(1, words=3000))))
    site.redirects |= {"/loop-a": "/loop-b", "/loop-b": "/loop-a"}
    site.pages["/"].body = html_page(
        "Home", "Welcome.", ["/docs/page-00.html", "/loop-a", "/docs/big.html"]
    )
    hub = source_hub(web_block(site, sitemap=None, max_bytes=10_000, max_depth=1))
    report = sync(hub)
    held = documents(hub)
    assert f"help:{site.url}/docs/page-00.html" in held
    assert not any("big.html" in name or "loop" in name for name in held)
    assert site.answers[("/loop-a", 301)] + site.answers[("/loop-b", 301)] == 6  # 5 redirects
    assert "byte limit" in report.incomplete or "redirects" in report.incomplete


def test_a_sitemap_longer_than_max_pages_is_not_a_whole_listing(site, source_hub) -> None:
    hub = source_hub(web_block(site, url=None))
    assert sync(hub).listed == PAGES + 2
    capped = source_hub(web_block(site, url=None, max_pages=10), engine="memory")
    report = sync(capped)
    assert report.listed == 10 and "max_pages (10)" in report.incomplete
