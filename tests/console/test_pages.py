"""The console's pages are shells (no data without the API's key) and /docs, /redoc work offline."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import hash_collection, write_config

SECRET_DESCRIPTION = "Payroll of the board members"
PAGES = ["/", "/console/collections/payroll", "/console/ask", "/console/jobs", "/console/keys"]


def test_pages_render_without_a_key_but_hold_no_collection_data(
    tmp_path: Path, make_settings, serve
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "salaries.md").write_text("The chair earns 120k a year.")
    entry = hash_collection(kb, description=SECRET_DESCRIPTION)
    config = write_config(tmp_path / "collections.yaml", {"payroll": entry, "other": entry})
    server = serve(make_settings(config, api_key="r", admin_api_key="a"))
    with server.client() as http:
        for path in PAGES:
            page = http.get(path)
            assert page.status_code == 200, path
            assert page.headers["content-type"].startswith("text/html")
            assert SECRET_DESCRIPTION not in page.text and "other" not in page.text
            assert "salaries" not in page.text and "120k" not in page.text
            for asset in re.findall(r'(?:src|href)="(/console/static/[^"]+)"', page.text):
                assert http.get(asset).status_code == 200, asset
            assert '<link rel="icon" href="/favicon.ico"' in page.text
        assert http.get("/v1/overview").status_code == 401  # the data stays behind the key
        # a name in the path is echoed escaped, never as markup
        hostile = http.get("/console/collections/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
        assert hostile.status_code == 200
        assert "<img src=x" not in hostile.text and "&lt;img src=x" in hostile.text


def test_swagger_and_redoc_load_only_assets_the_hub_serves(
    tmp_path: Path, make_settings, serve
) -> None:
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    server = serve(make_settings(config))
    with server.client() as http:
        for page, minimum in (("/docs", 2), ("/redoc", 1)):
            html = http.get(page).text
            urls = re.findall(r'(?:src|href|url)\s*[=:]\s*[\'"]([^\'"]+)[\'"]', html)
            assert not [u for u in urls if u.startswith(("http:", "https:", "//"))], urls
            assets = [u for u in urls if u.startswith("/static-offline-docs/")]
            assert len(assets) >= minimum, urls
            for asset in assets:
                served = http.get(asset)
                assert served.status_code == 200 and len(served.content) > 1000, asset
        info = http.get("/openapi.json").json()["info"]
        assert info["title"] == "RAG Hub" and "](/)" in info["description"]  # /docs links back
        assert '"/favicon.ico"' in http.get("/docs").text
        icon = http.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
