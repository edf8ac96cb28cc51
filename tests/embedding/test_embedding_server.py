"""Models behind a server (issue 61), against a real embedding server on loopback
(tests.support.embedding_server): a folder indexed through the hub comes out whole, each chunk
once with its own vector, whatever the server does (503s, 429s, connections cut, a hang); a 429's
Retry-After is waited on the server's clock; the requests in flight stay within `concurrency`
(two groups of documents' requests together) and fall while the server sheds load; a question gets one quick retry at most.

A refused input and the memory of a large folder: tests/indexing/test_ingest_remote.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.embedding.remote_embedders import RemoteEmbedder
from rag_api.errors import EmbedderUnavailable
from rag_api.hub import Hub
from rag_api.indexing import pipeline
from rag_api.indexing.sync import sync_collection
from rag_api.settings import Settings
from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config
from tests.support.embedding_server import DIM, EmbeddingServer, vector

FILES, SECTIONS = 12, 4  # a chunk a section: 48 chunks
HUNG_S = 20.0  # a hung request's hang: a client without a timeout waits this long for it


def write_kb(root: Path, files: int = FILES, sections: int = SECTIONS) -> Path:
    """`files` markdown files of `sections` short sections each, a chunk a section."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        parts = "".join(
            f"## Part {k}\n\nFile {i}, part {k}: item {i * 31 + k} is kept on shelf {k * 7 + i}, "
            f"row {i % 5}, next to the box of part {k + 1}.\n\n"
            for k in range(sections)
        )
        (root / f"doc{i:03}.md").write_text(f"# Document {i}\n\n{parts}", encoding="utf-8")
    return root


def embedder_block(server: EmbeddingServer, shape: str, **knobs: Any) -> dict[str, Any]:
    """An embedder block on the server: `openai` (/v1/embeddings) or `ollama` (/api/embed)."""
    url = server.openai_url if shape == "openai" else server.url
    return {"provider": shape, "model": "e", "dim": DIM, "base_url": url, **knobs}


def remote_hub(tmp_path: Path, kb: Path, block: dict[str, Any], make_settings, open_hub) -> Hub:
    """`docs`: the kb on the server's model; `ref`: the same kb on the hash embedder, the chunks
    `docs` must hold."""
    collections = {
        "docs": hash_collection(kb, embedder=block),
        "ref": hash_collection(kb),
    }
    return open_hub(make_settings(write_config(tmp_path / "c.yaml", collections)))


def chunks(hub: Hub, name: str, with_dense: bool = False) -> list[Any]:
    collection = hub.collection(name)
    return list(
        hub.store.iter_records(collection.info(refresh=True).physical, with_dense=with_dense)
    )


def assert_each_chunk_once_with_its_own_vector(hub: Hub) -> int:
    """`docs` holds the kb's chunks (those `ref` holds) each once, each with the server's vector
    of its own text (none shifted to a neighbour's); the chunk count."""
    sync_collection(hub.collection("ref"))
    stored = chunks(hub, "docs", with_dense=True)
    keys = [(r.payload["source"], r.payload["chunk_index"]) for r in stored]
    assert len(set(keys)) == len(keys), "a chunk is stored twice"

    def triples(records: list[Any]) -> list[tuple[str, int, str]]:
        return sorted(
            (r.payload["source"], r.payload["chunk_index"], r.payload["text"]) for r in records
        )

    assert triples(stored) == triples(chunks(hub, "ref"))
    wrong = [
        r.payload["text"]
        for r in stored
        if not np.allclose(np.asarray(r.dense), vector(r.payload["text"]), atol=1e-5)
    ]
    assert not wrong, f"{len(wrong)} of {len(stored)} chunks hold another text's vector"
    return len(stored)


def served(entry: dict[str, Any], log: list[dict[str, Any]]) -> dict[str, Any]:
    """The request answered 200 that carried `entry`'s texts again, after it."""
    later = [
        r
        for r in log
        if r["arrived"] > entry["arrived"]
        and r["texts"] == entry["texts"]
        and r.get("status") == 200
    ]
    assert later, f"the {entry.get('status', 'hung')} request was not retried"
    return later[0]


@pytest.fixture
def embedding_server() -> Iterator[Callable[..., EmbeddingServer]]:
    """Start EmbeddingServer(**knobs); stopped at the end of the test."""
    started: list[EmbeddingServer] = []

    def start(**knobs: Any) -> EmbeddingServer:
        server = EmbeddingServer(**knobs)
        server.__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


def remote_embedder(server: EmbeddingServer, shape: str = "openai", **knobs: Any) -> RemoteEmbedder:
    """The embedder a block on the server builds, outside a hub."""
    embedder = Embedders(Settings()).get(EmbedderConfig(**embedder_block(server, shape, **knobs)))
    assert isinstance(embedder, RemoteEmbedder)
    return embedder


# --- 1. indexing under each fault ----------------------------------------------------------------

FAULTS = {
    "503": ("503", 3, {}),
    "429-retry-after": ("429", 3, {"retry_after_s": 0.2}),
    "cut": ("cut", 3, {}),
    "hang": ("hang", 1, {"hang_s": HUNG_S}),
}


@pytest.mark.parametrize("shape", ["openai", "ollama"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_indexing_under_a_fault_stores_each_chunk_once_with_its_own_vector(
    fault: str, shape: str, tmp_path: Path, embedding_server, make_settings, open_hub
) -> None:
    kind, times, knobs = FAULTS[fault]
    server = embedding_server()
    # small requests, several in flight: a fault hits some of them, the rest go on beside
    block = embedder_block(server, shape, batch_size=4, concurrency=4, timeout_s=1)
    hub = remote_hub(tmp_path, write_kb(tmp_path / "kb"), block, make_settings, open_hub)
    sync_collection(hub.collection("ref"))  # the chunker's first use (seconds): not timed below
    server.configure(latency_s=0.01, faults=[{"kind": kind, "times": times}], **knobs)
    started = time.monotonic()
    report = sync_collection(hub.collection("docs"))
    took = time.monotonic() - started
    if kind == "hang":  # given up after timeout_s and sent again, not waited for
        assert took < HUNG_S / 2, f"the sync waited {took:.1f} s on a hung request"
    assert report.errors == {} and report.indexed == FILES, report.errors
    assert assert_each_chunk_once_with_its_own_vector(hub) == FILES * SECTIONS
    log = server.log()["requests"]
    status = None if kind == "hang" else (kind if kind == "cut" else int(kind))
    faulted = [r for r in log if r.get("status") == status]
    assert len(faulted) == times, [r.get("status") for r in log]
    for entry in faulted:  # each faulted request came again and was answered
        served(entry, log)


# --- 2. Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["openai", "ollama"])
def test_a_429_is_retried_no_sooner_than_its_retry_after_on_the_servers_clock(
    shape: str, embedding_server
) -> None:
    asked = 1.0  # longer than any backoff of a first retry (at most 0.5 s)
    server = embedding_server(faults=[{"kind": "429", "times": 1}], retry_after_s=asked)
    embedder = remote_embedder(server, shape, batch_size=8)
    texts = [f"the answer number {i}" for i in range(5)]
    embedded = embedder.embed_each(texts)
    assert embedded.failed == {} and embedded.down is None
    assert np.allclose(embedded.vectors, np.stack([vector(t) for t in texts]), atol=1e-5)
    log = server.log()["requests"]
    assert [r["status"] for r in log] == [429, 200]
    shed, retry = log
    assert retry["texts"] == shed["texts"]
    waited = retry["arrived"] - shed["done"]
    assert asked <= waited < asked * 1.1 + 2, f"retried {waited:.3f} s after a {asked} s 429"


def test_a_retry_after_holds_every_request_to_the_server_not_only_the_one_answered(
    embedding_server,
) -> None:
    asked = 1.0
    # two requests in flight: the first is answered 429 at once, the other served in 0.5 s; then
    # that other thread's next request waits for the pause the server asked, too
    server = embedding_server(
        latency_s=0.5, faults=[{"kind": "429", "times": 1}], retry_after_s=asked
    )
    embedder = remote_embedder(server, batch_size=1, concurrency=2)
    texts = [f"held text {i}" for i in range(4)]
    assert embedder.embed_each(texts).failed == {}
    log = server.log()["requests"]
    assert [r["status"] for r in log] == [429] + [200] * 4
    shed, sent_after = log[0], log[2:]  # log[1]: the other one in flight
    early = [round(r["arrived"] - shed["done"], 3) for r in sent_after]
    assert min(early) >= asked, f"requests sent {early} s after a {asked} s Retry-After"


# --- 3. requests in flight -----------------------------------------------------------------------


def test_requests_in_flight_never_exceed_concurrency_while_indexing(
    tmp_path: Path, embedding_server, make_settings, open_hub
) -> None:
    # room for 16 at once on the server: only the embedder's setting holds the requests back
    server = embedding_server(latency_s=0.05, capacity=16, overflow="wait")
    # a request a chunk: however the chunks are grouped, a group is a file's 4 requests or more
    block = embedder_block(server, "openai", batch_size=1, concurrency=3)
    hub = remote_hub(tmp_path, write_kb(tmp_path / "kb"), block, make_settings, open_hub)
    docs = hub.collection("docs")
    server.configure(latency_s=0.05, capacity=16, overflow="wait")
    report = sync_collection(docs)
    assert report.errors == {} and report.indexed == FILES
    log = server.log()
    assert len(log["requests"]) == FILES * SECTIONS
    # at most the setting, and the setting used: the requests did go three at a time
    assert log["max_active"] == 3
    embedder = docs.embedders.get(docs.cfg.embedder)
    assert isinstance(embedder, RemoteEmbedder) and embedder.inflight.peak == 3


def test_a_groups_first_requests_go_out_beside_the_last_of_the_group_before(
    tmp_path: Path, embedding_server, make_settings, open_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a group a file (its 4 chunks), a request a chunk: one group alone never has 6 in flight
    monkeypatch.setattr(pipeline, "GROUP_CHUNKS", SECTIONS)
    server = embedding_server(latency_s=0.1, capacity=16, overflow="wait")
    block = embedder_block(server, "openai", batch_size=1, concurrency=6)
    hub = remote_hub(tmp_path, write_kb(tmp_path / "kb"), block, make_settings, open_hub)
    server.configure(latency_s=0.1, capacity=16, overflow="wait")
    report = sync_collection(hub.collection("docs"))
    assert report.errors == {} and report.indexed == FILES
    assert server.log()["max_active"] == 6  # two groups' requests at once, within the setting
    assert assert_each_chunk_once_with_its_own_vector(hub) == FILES * SECTIONS


def test_a_server_that_stops_answering_mid_sync_leaves_the_groups_before_it_whole(
    tmp_path: Path, embedding_server, make_settings, open_hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a group a file, two groups in flight; the server answers three groups' requests, then 503s
    monkeypatch.setattr(pipeline, "GROUP_CHUNKS", SECTIONS)
    knobs = {"latency_s": 0.2, "capacity": 16, "overflow": "wait"}
    server = embedding_server(**knobs)
    block = embedder_block(server, "openai", batch_size=1, concurrency=6, retry_wait_s=0)
    hub = remote_hub(tmp_path, write_kb(tmp_path / "kb"), block, make_settings, open_hub)
    server.configure(**knobs)

    def outage() -> None:
        wait_for(lambda: len(server.log()["requests"]) >= 3 * SECTIONS)
        server.configure(**knobs, faults=[{"kind": "503", "times": 10_000}])

    cut = threading.Thread(target=outage)
    cut.start()
    with pytest.raises(EmbedderUnavailable):
        sync_collection(hub.collection("docs"))
    cut.join()
    stored: dict[str, int] = {}
    for record in chunks(hub, "docs"):
        stored[record.payload["source"]] = stored.get(record.payload["source"], 0) + 1
    written = sorted(stored)
    assert 0 < len(written) < FILES, written
    assert written == [f"doc{i:03}.md" for i in range(len(written))]  # the groups handed on first
    assert set(stored.values()) == {SECTIONS}  # each document whole

    server.configure(latency_s=0.0)
    report = sync_collection(hub.collection("docs"))
    assert report.errors == {} and report.indexed == FILES - len(written)
    assert assert_each_chunk_once_with_its_own_vector(hub) == FILES * SECTIONS


def test_requests_in_flight_fall_while_the_server_sheds_load_and_grow_back_after(
    embedding_server,
) -> None:
    concurrency = 8
    # the server serves 2 at once and answers 429 to more
    server = embedding_server(latency_s=0.05, capacity=2, overflow="429")
    embedder = remote_embedder(server, batch_size=1, concurrency=concurrency)
    texts = [f"shed text {i}" for i in range(24)]
    embedded = embedder.embed_each(texts)
    assert embedded.failed == {}
    assert np.allclose(embedded.vectors, np.stack([vector(t) for t in texts]), atol=1e-5)
    sheds = [r for r in server.log()["requests"] if r["status"] == 429]
    assert sheds, "the server never shed load"
    assert embedder.inflight.limit < concurrency  # the limiter's state after the sheds

    # the server has room again: the next requests still go fewer than `concurrency` at once
    server.configure(latency_s=0.1)
    embedder.embed_each([f"after the sheds {i}" for i in range(concurrency)])
    after = server.log()
    assert after["max_active"] < concurrency, after["max_active"]
    assert all(r["status"] == 200 for r in after["requests"])

    # ... and as answers come, the limit grows back to the setting
    server.configure(latency_s=0.1)
    embedder.embed_each([f"recovered {i}" for i in range(64)])
    assert server.log()["max_active"] == concurrency
    assert embedder.inflight.limit == concurrency


# --- 5. a question's embedding -------------------------------------------------------------------


def test_a_question_gets_one_quick_retry_then_a_clear_error(
    tmp_path: Path, embedding_server, make_settings, serve
) -> None:
    server = embedding_server()
    # a batch of documents would wait up to 30 s for the server: a question does not
    block = embedder_block(server, "openai", retry_wait_s=30)
    kb = write_kb(tmp_path / "kb", files=2)
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=block)})
    live = serve(make_settings(config))
    sync_collection(live.hub.collection("docs"))
    with httpx.Client(base_url=live.url + "/v1/rag", timeout=60) as http:
        server.configure(faults=[{"kind": "503", "times": 1}])
        answered = http.post("/search", json={"query": "which shelf holds item 32?"})
        assert answered.status_code == 200, answered.text
        assert answered.json()["results"]
        assert [r["status"] for r in server.log()["requests"]] == [503, 200]

        server.configure(faults=[{"kind": "503", "times": 100}])
        started = time.monotonic()
        refused = http.post("/search", json={"query": "which row holds item 63?"})
        took = time.monotonic() - started
        error = assert_error_shape(refused, 503, "EMBEDDER_UNAVAILABLE")
        assert "503" in error["message"], error
        assert error["message"].count(server.openai_url) == 1, error  # the address said once
        assert [r["status"] for r in server.log()["requests"]] == [503, 503]  # one retry
        assert took < 5, f"the question waited {took:.1f} s"
