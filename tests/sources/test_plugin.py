"""A kind of source from a plugin: docs/sources.md's worked example, installed as pip would
install it (a module and its dist-info with an entry point), against a JSON API on loopback."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rag_api.config import parse_config
from rag_api.errors import ConfigError
from tests.conftest import REPO, hash_collection
from tests.sources.conftest import documents, sync

PAGES = {
    "1": {
        "title": "Parking",
        "version": 1,
        "html": "<h1>Parking</h1><p>Staff park on level two.</p>",
    },
    "2": {"title": "Badges", "version": 1, "html": "<h1>Badges</h1><p>Badges are at the desk.</p>"},
}


def docs_example(language: str, after: str = "") -> str:
    """The first `language` block of docs/sources.md after the text `after`."""
    text = (REPO / "docs" / "sources.md").read_text(encoding="utf-8")
    found = re.search(rf"```{language}\n(.*?)```", text[text.index(after) :], re.S)
    assert found, language
    return found.group(1)


@pytest.fixture
def notes_api() -> Iterator[dict[str, Any]]:
    """The notes service the example reads: GET /api/pages and /api/pages/{id}/export."""
    served: dict[str, Any] = {"pages": PAGES, "exports": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path == "/api/pages":
                rows = [
                    {
                        "id": int(k),
                        "title": p["title"],
                        "version": p["version"],
                        "link": f"https://notes/{k}",
                    }
                    for k, p in served["pages"].items()
                ]
                body, kind = json.dumps(rows).encode(), "application/json"
            elif (match := re.fullmatch(r"/api/pages/(\d+)/export", path)) and match[1] in served[
                "pages"
            ]:
                served["exports"] += 1
                body, kind = served["pages"][match[1]]["html"].encode(), "text/html"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    served["url"] = f"http://127.0.0.1:{server.server_port}"
    yield served
    server.shutdown()
    server.server_close()


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/sources.md's notes_source.py, installed into a folder on sys.path."""
    site = tmp_path / "site"
    info = site / "notes_source-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "notes_source.py").write_text(docs_example("python", "**A plugin.**"))
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-source\nVersion: 1.0\n")
    toml = docs_example("toml", "**A plugin.**")  # the same table, as entry_points.txt spells it
    entry_points = toml.replace("[project.entry-points.", "[").replace('"', "")
    (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(site))


def block(url: str) -> dict[str, Any]:
    return {"name": "wiki", "kind": "notes", "url": url, "space": "HR"}


def test_a_kind_is_unknown_until_its_plugin_is_installed() -> None:
    collections = {"a": hash_collection(None, sources=[block("http://notes")])}
    with pytest.raises(
        ConfigError, match=r"sources\[0\]\.kind: Input should be 'web', 's3' or 'git'"
    ):
        parse_config({"default_collection": "a", "collections": collections})


def test_the_docs_plugin_syncs_like_a_built_in_kind(plugin, notes_api, source_hub) -> None:
    hub = source_hub(block(notes_api["url"]))
    assert hub.collection("docs").cfg.sources[0].settings == {
        "url": notes_api["url"],
        "space": "HR",
    }
    first = sync(hub)
    assert first.indexed == 2 and notes_api["exports"] == 2
    held = documents(hub)
    assert set(held) == {"wiki:1", "wiki:2"} and held["wiki:1"][0].url == "https://notes/1"
    again = sync(hub)
    assert again.unchanged == 2 and notes_api["exports"] == 2  # nothing exported again
    notes_api["pages"] = {"1": {**PAGES["1"], "version": 2, "html": "<p>Level three now.</p>"}}
    third = sync(hub)
    assert third.indexed == 1 and third.removed == ["2"]
    assert "Level three" in documents(hub)["wiki:1"][0].text
