"""Stored responses: `store` keeps a response (default true), `previous_response_id` continues it,
also after a restart; GET and DELETE /v1/responses/{id}; an unknown, expired, unstored or
unreadable one is a 404 in OpenAI's shape."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from rag_api.access.keys import KeysFile
from rag_api.openai_compat.stored import ResponseNotFound, ResponseStore, StoredResponse
from tests.conftest import LiveServer
from tests.support.openai_support import REFUND, upstream_hub

ADMIN = "admin-key"
PRICE = "And how much does the Business plan cost?"


@contextmanager
def hub_at(root: Path, upstreams, **settings) -> Iterator[LiveServer]:
    """The hub over `root` (its data dir kept from any earlier run), served until the block ends."""
    ollama, relay = upstreams
    hub, live = upstream_hub(root, ollama.url, relay.url, admin_api_key=ADMIN, **settings)
    try:
        yield live
    finally:
        live.stop()
        hub.close()


def sdk(live: LiveServer, key: str = ADMIN) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.url + "/v1", api_key=key, max_retries=0)


@pytest.mark.parametrize("qdrant_url", [None, ":memory:"], ids=["edge", "memory"])
def test_previous_response_id_continues_the_conversation_after_a_restart(
    tmp_path, upstreams, qdrant_url
):
    _, relay = upstreams
    relay.reply = "You have 30 days [1]."
    with hub_at(tmp_path, upstreams, qdrant_url=qdrant_url) as live:
        first = sdk(live).responses.create(model="relay", input=REFUND)
        assert first.store is True
    # a new hub and app over the same data dir (the in-memory store is indexed anew)
    with hub_at(tmp_path, upstreams, qdrant_url=qdrant_url) as live:
        client = sdk(live)
        assert client.responses.retrieve(first.id).output_text == first.output_text
        relay.reply = "It costs $15 [1]."
        second = client.responses.create(
            model="relay", previous_response_id=first.id, input=PRICE, instructions="Be brief."
        )
    assert second.previous_response_id == first.id
    sent = relay.calls("/v1/chat/completions")[-1].body["messages"]
    assert sent[0]["role"] == "system" and "Be brief." in sent[0]["content"]
    assert sent[1:] == [
        {"role": "user", "content": REFUND},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": PRICE},
    ]


def test_a_follow_up_is_retrieved_with_the_stored_question(tmp_path, upstreams):
    """As for a chat follow-up: a short question leaning on the previous one is searched with it."""
    with hub_at(tmp_path, upstreams) as live:
        client = sdk(live)
        first = client.responses.create(model="plain", input="How long do refunds take to arrive?")
        follow = client.responses.create(
            model="plain", previous_response_id=first.id, input="and does it reach the card?"
        )
    assert follow.model_extra["sources"][0]["source"] == "billing.md"
    assert follow.model_extra["retrieval"] == {
        "query": "How long do refunds take to arrive?\nand does it reach the card?",
        "follow_up": "merged",
        "why": "'it' points back to the previous question",
    }


def test_store_false_delete_and_unknown_ids(tmp_path, upstreams):
    with hub_at(tmp_path, upstreams) as live:
        client = sdk(live)
        unstored = client.responses.create(model="plain", input=REFUND, store=False)
        assert unstored.store is False
        kept = client.responses.create(model="plain", input=REFUND)
        assert client.responses.retrieve(kept.id).id == kept.id
        streamed = list(client.responses.create(model="plain", input=REFUND, stream=True))
        final = streamed[-1].response  # kept once the stream is done
        assert client.responses.retrieve(final.id).output_text == final.output_text
        for missing in (unstored.id, "resp_" + "0" * 32, "resp_x", ".keys"):
            with pytest.raises(openai.NotFoundError) as info:
                client.responses.retrieve(missing)
            assert info.value.body["code"] == "response_not_found"
        with pytest.raises(openai.NotFoundError) as info:
            client.responses.create(model="plain", previous_response_id=unstored.id, input="x")
        assert info.value.param == "previous_response_id"
        headers = {"Authorization": f"Bearer {ADMIN}"}
        deleted = httpx.delete(f"{live.url}/responses/{kept.id}", headers=headers)  # unprefixed
        assert deleted.json() == {"id": kept.id, "object": "response", "deleted": True}
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(kept.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.delete(kept.id)


def test_a_stored_response_expires(tmp_path, upstreams):
    with hub_at(tmp_path, upstreams, responses_ttl=0.5) as live:
        client = sdk(live)
        done = client.responses.create(model="plain", input=REFUND)
        assert client.responses.retrieve(done.id).id == done.id
        time.sleep(0.6)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(done.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.create(model="plain", previous_response_id=done.id, input="x")
    assert not list((tmp_path / "data" / "responses").glob("*.json"))  # expired: removed


def test_a_key_that_cannot_read_the_collection_cannot_see_its_responses(tmp_path, upstreams):
    _, secret = KeysFile(tmp_path / "data" / "keys.json").create("plain only", ["plain"], [])
    with hub_at(tmp_path, upstreams) as live:
        admin, scoped = sdk(live), sdk(live, secret)
        other = admin.responses.create(model="relay", input=REFUND)
        own = scoped.responses.create(model="plain", input=REFUND)
        assert scoped.responses.retrieve(own.id).id == own.id
        for call in (
            lambda: scoped.responses.retrieve(other.id),
            lambda: scoped.responses.delete(other.id),
            lambda: scoped.responses.create(
                model="plain", previous_response_id=other.id, input="x"
            ),
        ):
            with pytest.raises(openai.NotFoundError):
                call()
        assert admin.responses.retrieve(other.id).id == other.id  # still there


def test_the_store_keeps_a_bounded_count_and_age(tmp_path):
    now = [1_000_000.0]
    store = ResponseStore(tmp_path, ttl_s=100, max_count=2, clock=lambda: now[0])

    def save(n: int) -> str:
        response_id = f"resp_{n:032x}"
        store.save(StoredResponse("docs", now[0], {"id": response_id, "output": []}, []))
        now[0] += 10
        return response_id

    first, second, third = save(1), save(2), save(3)
    with pytest.raises(ResponseNotFound):
        store.find(first)  # the oldest beyond the count
    assert store.find(second).collection == "docs"
    now[0] += 85  # `second` is 105 s old, `third` 95 s
    with pytest.raises(ResponseNotFound):
        store.find(second)
    assert store.find(third).created_at == now[0] - 95


def test_an_expired_response_is_swept_from_disk_by_the_next_save(tmp_path):
    now = [1_000_000.0]
    store = ResponseStore(tmp_path, ttl_s=100, max_count=10, clock=lambda: now[0])
    old = {"id": f"resp_{1:032x}", "output": []}
    store.save(StoredResponse("docs", now[0], old, []))
    now[0] += 150  # expired, never read again
    store.save(StoredResponse("docs", now[0], {"id": f"resp_{2:032x}", "output": []}, []))
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"resp_{2:032x}.json"]


def test_saves_never_scan_the_folder_and_a_restart_reads_it_once(tmp_path, monkeypatch):
    now = [1_000_000.0]

    def save(store: ResponseStore, n: int) -> None:
        store.save(StoredResponse("docs", now[0], {"id": f"resp_{n:032x}", "output": []}, []))
        now[0] += 1

    first = ResponseStore(tmp_path, ttl_s=1000, max_count=3, clock=lambda: now[0])
    for n in range(5):
        save(first, n)
    scans: list[object] = []  # every listing of the folder, whichever way it is read
    scandir, listdir = os.scandir, os.listdir  # under glob, iterdir and walk alike
    monkeypatch.setattr(os, "scandir", lambda *a: scans.append(a) or scandir(*a))
    monkeypatch.setattr(os, "listdir", lambda *a: scans.append(a) or listdir(*a))
    restarted = ResponseStore(tmp_path, ttl_s=1000, max_count=3, clock=lambda: now[0])
    for n in range(5, 25):
        save(restarted, n)
    assert len(scans) == 1  # once, at the first save after the restart
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f"resp_{n:032x}.json" for n in (22, 23, 24)]
