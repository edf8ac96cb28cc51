"""Prefetch: `"prefetch": true` on /v1/rag/search and /context is acknowledged at once (202) and the
same request then answers from that work, marked cached, only while nothing it reads changed,
only for the key that asked; kept answers and running prefetches are bounded. Both engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api.access.keys import KeysFile
from rag_api.config import EmbedderConfig
from rag_api.hub import Hub
from rag_api.kbadmin.models import Search, SearchResults
from rag_api.kbadmin.prefetch import SLOTS, Prefetches
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.take import take_backup
from rag_api.ops.migrate.run import plan_migration, run_migration
from rag_api.routing import Target
from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config
from tests.support.fakes.openai_upstream import FakeOpenAI
from tests.support.migration_world import QUESTIONS, fill

ROUTES = ["/v1/rag/search", "/v1/rag/context"]
ASKED = {"query": QUESTIONS[0], "top_k": 3}


@pytest.fixture
def world(tmp_path, make_settings, open_hub, engine, serve):
    """A served hub over a kb folder and API documents; the hub itself for in-process operations."""
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(tmp_path / "kb")})
    settings = make_settings(config, engine)
    hub = open_hub(settings)
    fill(hub.collection("docs"), tmp_path / "kb")
    server = serve(settings, hub)
    with server.client() as http:
        yield hub, http, tmp_path


def without_timings(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("timings_ms", "cached")}


def prefetch(http: httpx.Client, route: str, body: dict[str, Any], **kw: Any) -> None:
    response = http.post(route, json={**body, "prefetch": True}, **kw)
    assert response.status_code == 202, response.text
    assert response.json() == {"prefetching": True}


@pytest.mark.parametrize("route", ROUTES)
def test_the_prefetched_answer_is_the_fresh_one_marked_cached(world, route) -> None:
    _, http, _ = world
    fresh = http.post(route, json=ASKED).json()
    assert "cached" not in fresh
    prefetch(http, route, ASKED)
    cached = http.post(route, json=ASKED).json()
    assert cached["cached"] is True
    assert without_timings(cached) == without_timings(fresh)
    other = http.post(route, json={**ASKED, "top_k": 2}).json()  # another request: its own work
    assert "cached" not in other


def upsert(hub: Hub, http: httpx.Client, tmp: Path) -> None:
    body = {"source": "api/new", "text": "The otter visited Lisbon again on a Sunday."}
    http.post("/v1/rag/upsert/document", json=body).raise_for_status()


def remove(hub: Hub, http: httpx.Client, tmp: Path) -> None:
    http.post("/v1/rag/remove", json={"source_prefix": "api/record-1"}).raise_for_status()


def reload(hub: Hub, http: httpx.Client, tmp: Path) -> None:
    first = sorted((tmp / "kb").glob("*.md"))[0]
    first.write_text("In Lisbon the otter keeper retired.", encoding="utf-8")
    http.post("/v1/rag/reload", json={}).raise_for_status()


def migrate(hub: Hub, http: httpx.Client, tmp: Path) -> None:
    bigger = EmbedderConfig(provider="hash", model="hash-128", dim=128)
    run_migration(hub, plan_migration(hub, "docs", bigger))


def restore(hub: Hub, http: httpx.Client, tmp: Path) -> None:
    restore_backup(hub, Path(take_backup(hub, to=tmp / "backups").path))


@pytest.mark.parametrize("change", [upsert, remove, reload, migrate, restore])
def test_any_change_between_prefetch_and_ask_means_a_fresh_answer(world, change) -> None:
    hub, http, tmp = world
    prefetch(http, "/v1/rag/context", ASKED)
    change(hub, http, tmp)
    answered = http.post("/v1/rag/context", json=ASKED)
    assert answered.status_code == 200, answered.text
    assert "cached" not in answered.json()
    prefetch(http, "/v1/rag/context", ASKED)  # after the change, prefetching serves again
    assert http.post("/v1/rag/context", json=ASKED).json()["cached"] is True


def test_a_prefetch_serves_only_the_key_that_asked(tmp_path, make_settings, engine, serve) -> None:
    config = write_config(
        tmp_path / "collections.yaml",
        {"docs": hash_collection(tmp_path / "kb"), "other": hash_collection()},
    )
    settings = make_settings(config, engine)
    keys = KeysFile(settings.keys_path)
    _, voice = keys.create("voice", ["docs"], [])
    _, chat = keys.create("chat", ["docs"], [])
    _, outsider = keys.create("outsider", ["other"], [])
    server = serve(settings)
    fill(server.hub.collection("docs"), tmp_path / "kb")

    def ask(secret: str, **body: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {secret}"}
        return httpx.post(server.url + "/v1/rag/search", json=body, headers=headers, timeout=30)

    assert ask(voice, **ASKED, prefetch=True).status_code == 202
    assert "cached" not in ask(chat, **ASKED).json()  # another key: its own work
    hidden = ask(outsider, **ASKED, collection="docs")
    assert_error_shape(hidden, 404, "COLLECTION_NOT_FOUND")  # as for any request of that key
    assert ask(voice, **ASKED).json()["cached"] is True


def test_kept_answers_are_bounded_and_expire(tmp_path, make_settings, open_hub) -> None:
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    hub = open_hub(make_settings(config))
    target = Target(hub.collection("docs"))

    def answer_to(request: Search):
        return lambda: SearchResults(
            query=request.query, count=0, results=[], collection="docs", mode="hybrid"
        )

    kept = Prefetches(hub, capacity=2)
    requests = [Search(query=q) for q in ("one", "two", "three")]
    for request in requests:
        kept.start("search", request, target, answer_to(request))
    assert kept.answer("search", requests[0], target) is None  # the oldest made room
    assert [kept.answer("search", r, target).cached for r in requests[1:]] == [True, True]
    kept.close()

    expired = Prefetches(hub, ttl=0.0)
    expired.start("search", requests[0], target, answer_to(requests[0]))
    assert expired.answer("search", requests[0], target) is None
    expired.close()


@pytest.mark.slow
def test_a_flood_of_prefetches_is_refused_past_its_bound(
    tmp_path, make_settings, engine, serve
) -> None:
    with FakeOpenAI(embed_models={"e": 32}) as upstream:
        embedder = {"provider": "openai", "model": "e", "dim": 32, "base_url": upstream.url + "/v1"}
        config = write_config(
            tmp_path / "collections.yaml", {"docs": hash_collection(embedder=embedder)}
        )
        server = serve(make_settings(config, engine))
        with server.client() as http:
            body = {"source": "s", "text": "the otter visited Lisbon"}
            http.post("/v1/rag/upsert/document", json=body).raise_for_status()
            upstream.embed_delay = 0.5  # each query's embedding: the prefetches pile up
            for n in range(SLOTS):
                prefetch(http, "/v1/rag/search", {"query": f"otter {n}"})
            refused = http.post("/v1/rag/search", json={"query": "otter x", "prefetch": True})
            assert_error_shape(refused, 429, "QUEUE_FULL")
            assert refused.headers["Retry-After"] == "1"
            wait_for(lambda: server.hub.kb.prefetches.running == 0, timeout=30)
            prefetch(http, "/v1/rag/search", {"query": "otter x"})  # room again
