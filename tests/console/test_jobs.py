"""The console's jobs (GET /v1/jobs) in a real browser: the jobs page lists every kind and its
filters, and a collection's page shows that collection's jobs beside its uploads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import hash_collection, wait_for, write_config
from tests.console.conftest import expect, kb_folder


@pytest.mark.slow
def test_the_jobs_page_and_a_collections_jobs(tmp_path: Path, hub_process, page) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("## Other\n\nSomething else.\n")
    config = write_config(
        tmp_path / "collections.yaml",
        {"docs": hash_collection(kb_folder(tmp_path)), "other": hash_collection(other)},
    )
    hub = hub_process(config)
    hub.wait_sources("docs", ["faq.md", "handbook.md"])
    with hub.client() as http:
        files = [("files", ("new.md", b"## New\n\nA new policy.\n", "text/markdown"))]
        uploaded = http.post("/v1/collections/docs/files", files=files)
        assert uploaded.status_code == 202
        job = f"/v1/jobs/{uploaded.json()['id']}"  # indexed before the check looks at the folder
        wait_for(lambda: http.get(job).json()["status"] == "done", 60)
        assert http.post("/v1/ops/check", json={"collection": "docs", "sample": 0}).is_success
        assert http.post("/v1/ops/check", json={"collection": "other", "sample": 0}).is_success
        broken = [("files", ("broken.pdf", b"%PDF-1.4\nnot really", "application/pdf"))]
        assert http.post("/v1/collections/other/files", files=broken).status_code == 202

    page.goto(hub.url + "/")
    page.get_by_role("link", name="Jobs").click()
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(4)
    expect(page.locator("#jobs tr[data-kind=upload][data-status=done]")).to_contain_text(
        "1 chunk(s), 1 embedded"
    )
    failed = page.locator("#jobs tr[data-kind=upload][data-status=failed]")
    expect(failed).to_contain_text("INDEXING_FAILED")
    expect(failed).to_contain_text("broken.pdf")
    expect(page.locator("#jobs tr[data-kind=check]")).to_have_count(2)

    page.select_option("#job-filters select[name=kind]", "check")
    page.fill("#job-filters input[name=collection]", "docs")
    page.click("#job-filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("healthy, 0 finding(s)")
    assert "kind=check" in page.url and "collection=docs" in page.url

    page.goto(hub.url + "/console/collections/docs")
    expect(page.locator("#jobs tbody tr")).to_have_count(2)  # the upload and the check of docs
    expect(page.locator("#jobs")).not_to_contain_text("broken.pdf")
    expect(page.locator("#all-jobs")).to_have_attribute("href", "/console/jobs?collection=docs")
