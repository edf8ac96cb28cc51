"""GET /v1/overview: each collection's configuration, files, chunks, watcher, last integrity check
and migration state in one read, and what the caller's key may do."""

from __future__ import annotations

from pathlib import Path

from rag_api.indexing.sync import sync_collection
from rag_api.ops.migrate.run import exclusive
from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config

READER, ADMIN = "reader-secret", "admin-secret"


def world(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("## Refunds\n\nRefunds are possible within 30 days.\n")
    (kb / "notes.txt").write_text("Parking is on level two.\n")
    (kb / ".hidden.md").write_text("not a kb file")
    collections = {
        "docs": hash_collection(kb, description="Product FAQ"),
        "voice": hash_collection(None, language="es"),  # fed only through the API
        "gone": hash_collection(tmp_path / "unmounted"),
    }
    return write_config(tmp_path / "collections.yaml", collections)


def by_name(body: dict) -> dict[str, dict]:
    return {row["name"]: row for row in body["collections"]}


def test_overview_gathers_each_collections_state(tmp_path: Path, make_settings, serve) -> None:
    server = serve(make_settings(world(tmp_path), api_key=READER, admin_api_key=ADMIN))
    sync_collection(server.hub.collection("docs"))
    reader = server.client(headers={"Authorization": f"Bearer {READER}"})
    admin = server.client(headers={"Authorization": f"Bearer {ADMIN}"})
    assert_error_shape(server.client().get("/v1/overview"), 401, "UNAUTHORIZED")

    body = reader.get("/v1/overview").json()
    assert (body["keys"], body["access"], body["default_collection"]) == (True, "read", "docs")
    rows = by_name(body)
    docs = rows["docs"]
    assert docs["description"] == "Product FAQ" and docs["language"] == "en"
    assert (docs["embedder"], docs["dim"], docs["points"]) == ("hash:hash-test", 64, 2)
    assert (docs["files"], docs["kb_problem"]) == (2, None)  # the hidden file does not count
    assert docs["watcher"] == {"running": False}  # this server does not watch
    assert docs["last_check"] is None
    assert docs["migration"] == {"running": False, "pending": None}
    assert (rows["voice"]["files"], rows["voice"]["kb_problem"]) == (None, None)
    assert rows["gone"]["files"] is None and "kb folder missing" in rows["gone"]["kb_problem"]
    assert admin.get("/v1/overview").json()["access"] == "admin"

    checked = reader.post("/v1/ops/check", json={"collection": "docs", "sample": 0})
    assert checked.status_code == 200 and checked.json()["status"] == "healthy"
    (tmp_path / "kb" / "faq.md").write_text("## Refunds\n\nNow 60 days.\n")  # not re-indexed
    again = reader.post("/v1/ops/check", json={"sample": 0}).json()
    assert again["status"] == "problems"
    rows = by_name(reader.get("/v1/overview").json())
    assert rows["docs"]["last_check"]["status"] == "problems"
    assert rows["docs"]["last_check"]["problems"] >= 1
    assert rows["docs"]["last_check"]["started_at"] == again["started_at"]
    assert rows["voice"]["last_check"]["status"] == "healthy"

    with exclusive(server.hub, "docs"):  # what a migration holds while it runs
        assert by_name(reader.get("/v1/overview").json())["docs"]["migration"]["running"]
    server.hub.store.create_physical("docs__v2", 32)  # what a migration cut short leaves
    migration = by_name(reader.get("/v1/overview").json())["docs"]["migration"]
    assert migration == {"running": False, "pending": "docs__v2"}

    assert rows["docs"]["last_backup"] is None
    from rag_api.ops.backup.take import take_backup

    taken = take_backup(server.hub, ["docs"])
    rows = by_name(reader.get("/v1/overview").json())
    assert rows["docs"]["last_backup"] == {"taken_at": taken.taken_at, "path": taken.path}
    assert rows["voice"]["last_backup"] is None


def test_overview_shows_the_watchers_last_sync(tmp_path: Path, make_settings, serve) -> None:
    server = serve(make_settings(world(tmp_path)), watch=True)
    with server.client() as http:
        docs = wait_for(lambda: _synced(http.get("/v1/overview").json()))
    assert docs["watcher"]["running"] and docs["watcher"]["watching"]
    assert docs["watcher"]["files"] == 2 and docs["watcher"]["last_sync"]
    assert docs["watcher"]["last_error"] is None
    assert docs["last_check"] is None


def _synced(body: dict) -> dict | None:
    docs = by_name(body)["docs"]
    return docs if docs["points"] == 2 and docs["watcher"].get("files") == 2 else None
