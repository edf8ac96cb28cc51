"""Every route of the app x every kind of key: the status each key gets, refused writes change
nothing, and a key never learns of a collection it may not read."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from rag_api.access.keys import KeysFile
from rag_api.http.openai_errors import app_routes
from rag_api.openai_compat.stored import ResponseStore, StoredResponse
from tests.conftest import hash_collection, write_config

READER, ADMIN = "reader-global-key", "admin-global-key"
ASK = [{"role": "user", "content": "How many days for a refund?"}]
STORED = "/responses/resp_" + "d0c5" * 8  # a stored response made against docs (`guarded`)
# each route of the app: (what it needs, the request that names `docs`)
#   public: no key; read / write / admin: that scope on `docs`; listing: any reading key (it
#   lists only what the key may read); every-read: a key that reads every collection;
#   report: any reading key (its answer is a report, never a 403/404)
ROUTES: dict[tuple[str, str], tuple[str, str, Any]] = {
    ("GET", "/health"): ("public", "/health", None),
    # the link is the authorisation (rag_api.access.links): no key; this one is not a link
    ("GET", "/passages/{token}"): ("public", "/passages/not-a-link", None),
    # RFC 9728's metadata, published only with access.oidc (a 404 here)
    ("GET", "/.well-known/oauth-protected-resource"): (
        "public",
        "/.well-known/oauth-protected-resource",
        None,
    ),
    ("GET", "/.well-known/oauth-protected-resource/mcp"): (
        "public",
        "/.well-known/oauth-protected-resource/mcp",
        None,
    ),
    ("GET", "/ready"): ("public", "/ready", None),
    ("GET", "/collections"): ("listing", "/collections", None),
    ("POST", "/query/{collection}"): (
        "read",
        "/query/docs",
        {"query": "refund", "generate": False},
    ),
    ("GET", "/v1/models"): ("listing", "/v1/models", None),
    ("GET", "/models"): ("listing", "/models", None),
    ("GET", "/v1/models/{model:any}"): ("read", "/v1/models/docs", None),
    ("GET", "/models/{model:any}"): ("read", "/models/docs", None),
    ("POST", "/v1/chat/completions"): (
        "read",
        "/v1/chat/completions",
        {"model": "docs", "messages": ASK},
    ),
    ("POST", "/chat/completions"): (
        "read",
        "/chat/completions",
        {"model": "docs", "messages": ASK},
    ),
    ("POST", "/v1/responses"): ("read", "/v1/responses", {"model": "docs", "input": "refund?"}),
    ("POST", "/responses"): ("read", "/responses", {"model": "docs", "input": "refund?"}),
    ("GET", "/v1/responses/{response_id}"): ("read", "/v1" + STORED, None),
    ("GET", "/responses/{response_id}"): ("read", STORED, None),
    # the first key allowed deletes it: the later ones get 404, as for any unknown response
    ("DELETE", "/v1/responses/{response_id}"): ("read", "/v1" + STORED, None),
    ("DELETE", "/responses/{response_id}"): ("read", STORED, None),
    ("POST", "/v1/embeddings"): ("read", "/v1/embeddings", {"model": "docs", "input": "refund"}),
    ("POST", "/embeddings"): ("read", "/embeddings", {"model": "docs", "input": "refund"}),
    ("POST", "/v1/ops/check"): ("report", "/v1/ops/check", {"collection": "docs"}),
    ("POST", "/v1/ops/migrate/plan"): (
        "admin",
        "/v1/ops/migrate/plan",
        {"collection": "docs", "rollback": True},
    ),
    ("POST", "/v1/ops/migrate"): (
        "admin",
        "/v1/ops/migrate",
        {"collection": "docs", "rollback": True},
    ),
    ("POST", "/v1/ops/drop-old"): ("admin", "/v1/ops/drop-old", {"collection": "docs"}),
    ("POST", "/v1/ops/backup"): ("admin", "/v1/ops/backup", {"collections": ["nope"]}),
    ("GET", "/v1/ops/backup/jobs/{job_id}"): ("admin", "/v1/ops/backup/jobs/nope", None),
    ("GET", "/v1/ops/backups"): ("admin", "/v1/ops/backups", None),
    ("POST", "/v1/ops/restore"): ("admin", "/v1/ops/restore", {}),
    ("GET", "/v1/indexer/status"): ("admin", "/v1/indexer/status", None),
    ("GET", "/metrics"): ("every-read", "/metrics", None),
    ("GET", "/v1/rag/status"): ("read", "/v1/rag/status?collection=docs", None),
    ("GET", "/v1/rag/sources"): ("read", "/v1/rag/sources?collection=docs", None),
    ("GET", "/v1/rag/chunks"): ("read", "/v1/rag/chunks?collection=docs", None),
    ("POST", "/v1/rag/chunks/list"): ("read", "/v1/rag/chunks/list", {"collection": "docs"}),
    ("POST", "/v1/rag/search"): (
        "read",
        "/v1/rag/search",
        {"query": "refund", "collection": "docs"},
    ),
    ("POST", "/v1/rag/context"): (
        "read",
        "/v1/rag/context",
        {"query": "refund", "collection": "docs"},
    ),
    ("POST", "/v1/rag/chunks/update"): (
        "write",
        "/v1/rag/chunks/update",
        {"collection": "docs", "index": 10**6, "new_text": "x"},
    ),
    ("POST", "/v1/rag/upsert/document"): (
        "write",
        "/v1/rag/upsert/document",
        {"collection": "docs", "source": "planted", "text": "planted"},
    ),
    ("POST", "/v1/rag/add/document"): (
        "write",
        "/v1/rag/add/document",
        {"collection": "docs", "source": "planted", "text": "planted"},
    ),
    ("POST", "/v1/rag/add/chunks"): (
        "write",
        "/v1/rag/add/chunks",
        {"collection": "docs", "items": [{"text": "planted"}]},
    ),
    ("POST", "/v1/rag/remove"): (
        "write",
        "/v1/rag/remove",
        {"collection": "docs", "source_prefix": "a"},
    ),
    ("POST", "/v1/rag/reload"): ("write", "/v1/rag/reload", {"collection": "docs"}),
    ("POST", "/v1/collections/{collection}/files"): ("write", "/v1/collections/docs/files", None),
    ("GET", "/v1/collections/{collection}/files"): ("read", "/v1/collections/docs/files", None),
    ("GET", "/v1/collections/{collection}/files/{path:any}"): (
        "read",
        "/v1/collections/docs/files/a.md",
        None,
    ),
    ("DELETE", "/v1/collections/{collection}/files/{path:any}"): (
        "write",
        "/v1/collections/docs/files/a.md",
        None,
    ),
    ("GET", "/v1/collections/{collection}/sources"): (
        "read",
        "/v1/collections/docs/sources",
        None,
    ),
    # docs has no source: a key allowed to write it learns so (404 SOURCE_NOT_FOUND)
    ("POST", "/v1/collections/{collection}/sources/{source}/sync"): (
        "write",
        "/v1/collections/docs/sources/wiki/sync",
        None,
    ),
    ("GET", "/v1/jobs"): ("listing", "/v1/jobs", None),
    ("GET", "/v1/jobs/{job_id}"): ("listing", "/v1/jobs/nope", None),
    ("POST", "/v1/collections/{collection}/eval"): ("read", "/v1/collections/docs/eval", {}),
    ("GET", "/v1/overview"): ("listing", "/v1/overview", None),
}
# what each key may do on `docs`: the scopes it holds there (None: it is no key at all)
KEYS = {
    "none": None,
    "unknown": None,
    "expired": None,
    "revoked": None,
    "reader-all": {"read", "listing", "report", "every-read"},
    "reader-other": {"listing"},  # reads soporte only
    "writer-one": {"read", "write", "listing", "report"},  # writes docs only
    "admin": {"read", "write", "admin", "listing", "report", "every-read"},
}


@pytest.fixture(scope="module", params=["edge", "memory"])
def guarded(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """Both engines: the embedded one, and qdrant-client's in-memory mode (the server path)."""
    from rag_api.settings import Settings
    from tests.conftest import LiveServer

    root = tmp_path_factory.mktemp("keys")
    for name in ("docs", "soporte"):
        (root / name).mkdir()
        (root / name / "a.md").write_text(f"# {name}\n\nRefunds take 30 days in {name}.\n")
    config = write_config(
        root / "c.yaml",
        {"docs": hash_collection(root / "docs"), "soporte": hash_collection(root / "soporte")},
    )
    settings = Settings(
        config=config,
        data_dir=root / "data",
        ollama_url="http://127.0.0.1:9",
        qdrant_url=None if request.param == "edge" else ":memory:",
        api_key=READER,
        admin_api_key=ADMIN,
        auth_failures=10_000,
    )
    keys = KeysFile(settings.keys_path)
    secrets = {"none": None, "unknown": "rag_0000_not-a-key", "reader-all": READER, "admin": ADMIN}
    secrets["reader-other"] = keys.create("other team", ["soporte"], [])[1]
    secrets["writer-one"] = keys.create("nightly feed", [], ["docs"])[1]
    secrets["expired"] = keys.create("old", ["*"], [], expires=timedelta(minutes=1))[1]
    revoked, secrets["revoked"] = keys.create("gone", ["*"], ["*"])
    keys.revoke(revoked.id)
    expired = keys.load()
    keys.save([k if k.name != "old" else _expired(k) for k in expired])
    response = {"id": STORED.rsplit("/", 1)[1], "output": []}
    store = ResponseStore(settings.responses_path, settings.responses_ttl, 10)
    store.save(StoredResponse("docs", time.time(), response, []))
    server = LiveServer(settings).start()
    with server.client(headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        for name in ("docs", "soporte"):
            assert http.post("/v1/rag/reload", json={"collection": name}).status_code == 200
    yield server, secrets
    server.stop()


def _expired(key):
    from dataclasses import replace

    return replace(key, expires="2000-01-01T00:00:00+00:00")


def test_every_route_of_the_app_is_in_the_table(guarded) -> None:
    server, _ = guarded
    routes = {
        (method, route.path)
        for route in app_routes({"app": server.app})
        if isinstance(route, APIRoute) and route.endpoint.__module__.startswith("rag_api.http")
        for method in route.methods
    }
    assert routes == set(ROUTES)


def _store(server) -> dict[str, list[tuple[str, str]]]:
    """Each collection's (source, text) pairs and kb files: what a refused write must not change."""
    with server.client(headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        state = {}
        for name in ("docs", "soporte"):
            page = http.get("/v1/rag/chunks", params={"collection": name, "include_text": "true"})
            state[name] = sorted((c["source"], c["text"]) for c in page.json()["items"])
            state[name + " files"] = sorted(
                p.name for p in (Path(server.hub.collection(name).kb_path)).iterdir()
            )
    return state


def _send(server, secret: str | None, method: str, path: str, body: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    return httpx.request(method, server.url + path, json=body, headers=headers, timeout=60)


@pytest.mark.parametrize("key", list(KEYS))
def test_each_key_gets_what_its_scopes_allow_on_every_route(guarded, key: str) -> None:
    server, secrets = guarded
    scopes = KEYS[key]
    before = _store(server) if scopes is None or "write" not in scopes else None
    table = {"allowed": 0, "401": 0, "403": 0, "404": 0}
    for (method, _), (needs, path, body) in ROUTES.items():
        answer = _send(server, secrets[key], method, path, body)
        status = answer.status_code
        if needs == "public" or (scopes is not None and needs in scopes):
            assert status not in (401, 403, 429), (key, path, answer.text)
            assert "'docs' is not configured" not in answer.text, (key, path, answer.text)
            table["allowed"] += 1
        elif scopes is None:
            assert status == 401, (key, path, answer.text)
            table["401"] += 1
        elif needs == "read":  # a collection this key may not read looks like an unknown one
            assert status == 404, (key, path, answer.text)
            table["404"] += 1
        elif needs == "report":  # the check's report says so, as for an unknown collection
            assert answer.json()["error"]["code"] == "COLLECTION_NOT_FOUND", (key, answer.text)
            table["404"] += 1
        else:
            assert status == 403, (key, path, answer.text)
            table["403"] += 1
        if key == "reader-other" and needs in ("listing", "public"):  # nothing of docs shown
            assert "docs" not in answer.text, (path, answer.text)
    if before is not None:
        assert _store(server) == before  # no refused write changed anything
    print(key, table)


def test_a_scoped_key_lists_and_routes_only_its_collections(guarded) -> None:
    server, secrets = guarded
    other = {"Authorization": f"Bearer {secrets['reader-other']}"}
    with server.client(headers=other) as http:
        assert [m["id"] for m in http.get("/v1/models").json()["data"]] == ["soporte"]
        assert [c["name"] for c in http.get("/collections").json()["collections"]] == ["soporte"]
        found = http.post("/v1/rag/search", json={"query": "refunds", "collections": ["soporte"]})
        assert {r["collection"] for r in found.json()["results"]} <= {"soporte"}
        unknown = http.post("/v1/rag/search", json={"query": "x", "collection": "nope"}).json()
        forbidden = http.post("/v1/rag/search", json={"query": "x", "collection": "docs"}).json()
        assert unknown["error"]["code"] == forbidden["error"]["code"] == "COLLECTION_NOT_FOUND"


def test_auto_and_streams_never_show_another_collection(guarded) -> None:
    server, secrets = guarded
    other = {"Authorization": f"Bearer {secrets['reader-other']}"}
    with server.client(headers=other) as http:
        routed = http.post("/query/auto", json={"query": "How long do refunds take?"}).json()
        assert [c["collection"] for c in routed["routing"]["candidates"]] == ["soporte"]
        assert "docs" not in str(routed["sources"]) and "docs" not in routed["answer"]
        streamed = http.post("/query/docs", json={"query": "refunds", "stream": True})
        assert streamed.status_code == 404 and "Refunds take" not in streamed.text
        chat = {"model": "auto", "messages": ASK, "stream": True}
        answer = http.post("/v1/chat/completions", json=chat)
        assert answer.status_code == 200 and "in docs" not in answer.text


def test_jobs_and_checks_of_another_collection_stay_out_of_sight(guarded) -> None:
    server, secrets = guarded
    admin = {"Authorization": f"Bearer {ADMIN}"}
    other = {"Authorization": f"Bearer {secrets['reader-other']}"}
    files = [("files", ("b.md", b"# B\n\nRefunds need a receipt.\n", "text/markdown"))]
    job = httpx.post(server.url + "/v1/collections/docs/files", files=files, headers=admin)
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    with server.client(headers=other) as http:
        assert [j["id"] for j in http.get("/v1/jobs").json()["jobs"]] == []
        hidden = http.get(f"/v1/jobs/{job_id}").json()["error"]
        unknown = http.get("/v1/jobs/0123abcd").json()["error"]
        assert hidden["code"] == unknown["code"] == "JOB_NOT_FOUND"
        assert hidden["message"].replace(job_id, "0123abcd") == unknown["message"]
        report = http.post("/v1/ops/check", json={"sample": 0}).json()
        assert [r["name"] for r in report["collections"]] == ["soporte"]
    with server.client(headers=admin) as http:
        assert job_id in [j["id"] for j in http.get("/v1/jobs").json()["jobs"]]
