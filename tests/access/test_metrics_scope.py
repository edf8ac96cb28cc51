"""The `metrics` scope: a key that may scrape /metrics sees the series of the collections it may
read and of none, never another collection's name; a key without it needs to read them all."""

from __future__ import annotations

from pathlib import Path

import httpx

from rag_api.access.keys import KeysFile
from tests.conftest import hash_collection, write_config

ADMIN = "admin-global-key"


def test_a_metrics_key_sees_only_the_series_of_collections_it_reads(
    tmp_path: Path, make_settings, serve
) -> None:
    collections = {}
    for name in ("docs", "soporte"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.md").write_text(f"# {name}\n\nRefunds take 30 days.\n")
        collections[name] = hash_collection(tmp_path / name)
    settings = make_settings(write_config(tmp_path / "c.yaml", collections), admin_api_key=ADMIN)
    keys = KeysFile(settings.keys_path)
    _, team = keys.create("team", ["soporte"], [], metrics=True)
    _, scraper = keys.create("scraper", [], [], metrics=True)
    _, reader = keys.create("reader", ["soporte"], [])
    server = serve(settings)

    def get(path: str, secret: str) -> httpx.Response:
        return httpx.get(server.url + path, headers={"Authorization": f"Bearer {secret}"})

    for name in ("docs", "soporte"):  # series labelled with each collection
        asked = {"query": "refunds", "generate": False}
        answer = httpx.post(
            f"{server.url}/query/{name}", json=asked, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert answer.status_code == 200, answer.text
    everything = get("/metrics", ADMIN).text
    assert 'collection="docs"' in everything and 'collection="soporte"' in everything

    seen = get("/metrics", team)
    assert seen.status_code == 200, seen.text
    assert 'collection="soporte"' in seen.text and 'collection="docs"' not in seen.text
    assert "rag_http_requests_total" in seen.text  # the series of no collection stay
    bare = get("/metrics", scraper)
    assert bare.status_code == 200 and 'collection="' not in bare.text
    assert "process_cpu_seconds_total" in bare.text or "python_info" in bare.text
    assert get("/collections", scraper).status_code == 403  # it scrapes, it reads nothing

    refused = get("/metrics", reader).json()["error"]  # without the scope: every collection
    assert refused["code"] == "FORBIDDEN" and "--metrics" in refused["message"]
