"""What the in-process tests of the MCP parts share: one hub per test module, of hash-embedded
collections (no model to load), that the tools and the document reads work on directly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rag_api.hub import Hub
from rag_api.kbadmin.models import Reload
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.site import Page, Site, html_page

GARAGE = "\n\n".join(
    f"Level {n} of the garage is kept for {who}. Ask the front desk for a pass to it, and show "
    "that pass to the attendant at the barrier when you drive in."
    for n, who in enumerate(["visitors", "staff", "deliveries", "bicycles"], 1)
)  # a passage each
FILES = {
    "docs": {
        "faq.md": "# Refunds\n\nRefunds are possible within 30 days of purchase.\n",
        "parking.md": GARAGE,
    },
    "soporte": {
        "faq.md": "# Devoluciones\n\nLas devoluciones se aceptan durante 30 días.\n",
        "envios.md": "# Envíos\n\nLos paquetes salen del almacén los lunes.\n",
    },
}
HOURS = "The help desk answers from nine to five on weekdays."


@pytest.fixture(scope="module")
def mcp_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """docs (English, the default) and soporte (Spanish) from kb folders, the two `auto` routes
    to; notes (API documents only, the first listed), site (one page synced from a web site: its
    chunks carry the page's address) and small (passages of 64 characters) left out of `auto`."""
    tmp = tmp_path_factory.mktemp("mcp")
    apart = {"routing": {"enabled": False}}
    entries: dict[str, Any] = {"notes": hash_collection(**apart)}  # listed first, not the default
    for name, files in FILES.items():
        kb = tmp / name
        kb.mkdir()
        for file, text in files.items():
            (kb / file).write_text(text, encoding="utf-8")
        entries[name] = hash_collection(
            kb, language="es" if name == "soporte" else "en", description=f"{name} desk"
        )
    entries["small"] = hash_collection(chunking={"size": 64, "overlap": 0}, **apart)
    with Site() as site:
        site.add("/hours.html", Page(html_page("Hours", HOURS)))
        web = {"name": "help", "kind": "web", "url": f"{site.url}/hours.html",
               "allow_private": True, "rate": 1000}  # fmt: skip
        entries["site"] = hash_collection(sources=[web], **apart)
        config = write_config(tmp / "collections.yaml", entries, default_collection="docs")
        settings = Settings(config=config, data_dir=tmp / "data", qdrant_url=":memory:",
                            ollama_url="http://127.0.0.1:9")  # fmt: skip
        hub = Hub.open(settings)
        try:
            for name in FILES:
                hub.kb.reload(Reload(collection=name))
            synced = hub.sources.run("site", "help")
            assert synced.indexed == 1 and not synced.failed, synced
        except BaseException:
            hub.close()
            raise
    yield hub
    hub.close()
