"""Replicas (docs/scaling.md): one writer and two readers on one Qdrant deployment, each hub served
by its own uvicorn on loopback and talking to the others over real HTTP.

These machines cannot run a Qdrant server, so the deployment is one qdrant-client in local mode
(`:memory:`) shared by the three hubs of this test process behind one lock (local mode is not
thread-safe): what a cluster would be to three processes. Each node has its own RAG_DATA_DIR."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from qdrant_client import QdrantClient

from rag_api.errors import AnotherWriter, ConfigError, ReaderReadOnly
from rag_api.hub import Hub
from rag_api.settings import Settings
from rag_api.store.remote import RemoteStore
from tests.conftest import (
    LiveServer,
    assert_error_shape,
    free_port,
    hash_collection,
    wait_for,
    write_config,
)

BOUND_S = 2.0  # the documented bound: a reader follows the writer within it (docs/scaling.md)
ADMIN = "admin-global-key"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@dataclass
class Deployment:
    writer: LiveServer
    readers: list[LiveServer]
    writer_hub: Hub
    settings: Callable[..., Settings]
    hub: Callable[[Settings], Hub]
    serve: Callable[..., LiveServer]

    def http(self, server: LiveServer, **headers: str) -> httpx.Client:
        return server.client(headers=headers or AUTH)


def within_bound(check: Callable[[], Any]) -> float:
    """Seconds until `check()` holds; fails past the bound (plus a second for a loaded machine's
    round trips)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < BOUND_S + 1.0, "not followed within the bound"
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.fixture
def deployment(tmp_path: Path, serve: Callable[..., LiveServer]) -> Iterator[Deployment]:
    client, guard = QdrantClient(location=":memory:"), threading.RLock()
    (tmp_path / "kb").mkdir()  # the writer's: uploads land there
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(tmp_path / "kb")})
    hubs: list[Hub] = []
    writer_port = free_port()

    def settings(node: str, role: str, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "config": config,
            "data_dir": tmp_path / node,
            "qdrant_url": "http://qdrant.test:6333",  # never dialled: the store is given
            "ollama_url": "http://127.0.0.1:9",
            "role": role,
            "writer_url": f"http://127.0.0.1:{writer_port}/",  # a trailing slash, as often written
            "admin_api_key": ADMIN,
            "writer_timeout_s": 5.0,
            "auth_failures": 10_000,  # the tests poll with keys not yet (or no longer) valid
        }
        return Settings(**{**values, **overrides})

    def hub(node_settings: Settings) -> Hub:
        store = RemoteStore.sharing(client, guard, "qdrant (one in-memory client)")
        opened = Hub.open(node_settings, store=store)
        hubs.append(opened)
        return opened

    def node(name: str, role: str, port: int | None = None) -> LiveServer:
        node_settings = settings(name, role)
        return serve(node_settings, hub(node_settings), port)

    writer = node("writer", "writer", writer_port)
    readers = [node("reader1", "reader"), node("reader2", "reader")]
    yield Deployment(writer, readers, hubs[0], settings, hub, serve)
    for server in (writer, *readers):
        server.stop()
    for opened in hubs:
        opened.close()


def found(server: LiveServer, query: str, needle: str) -> bool:
    with server.client(headers=AUTH) as http:
        response = http.post("/v1/rag/search", json={"query": query, "top_k": 5})
    assert response.status_code == 200, response.text
    return any(needle in item["text"] for item in response.json()["results"])


def test_a_write_sent_to_a_reader_lands_through_the_writer_and_every_reader_reads_it(
    deployment: Deployment,
) -> None:
    reader1, reader2 = deployment.readers
    # padded past one read of the reader's server (256 KiB): the body reaches the reader in
    # pieces, and the writer must get them all (a cut one is not JSON)
    body = (
        '{"text": "The refund window is 30 days.",' + " " * 300_000 + '"source": "policy/refunds"}'
    )
    with deployment.http(reader1) as http:
        added = http.post(
            "/v1/rag/add/document", content=body, headers={"Content-Type": "application/json"}
        )
    assert added.status_code == 200, added.text
    assert added.headers["content-type"] == "application/json"  # the writer's headers came back
    # it was written by the writer (the reader's store refuses writes), and is seen everywhere
    assert found(deployment.writer, "refund window", "30 days")
    for reader in (reader1, reader2):
        within_bound(lambda r=reader: found(r, "refund window", "30 days"))
    with deployment.http(reader2) as http:  # a file uploaded through a reader, its job followed
        files = [("files", ("shipping.md", b"# Shipping\n\nParcels ship within 5 days.\n"))]
        started = http.post("/v1/collections/docs/files", files=files)
        assert started.status_code == 202, started.text
        url = f"/v1/jobs/{started.json()['id']}"
        job = wait_for(lambda: (j := http.get(url).json())["status"] in ("done", "failed") and j)
        assert job["status"] == "done", job
        status = http.get("/v1/rag/status").json()
    assert (deployment.writer_hub.collections["docs"].kb_path / "shipping.md").exists()
    within_bound(lambda: found(reader1, "parcels ship", "5 days"))
    assert status["role"] == "reader"
    with deployment.http(reader1) as http:
        assert http.get("/ready").json()["role"] == "reader"
    with deployment.http(deployment.writer) as http:
        assert http.get("/ready").json()["role"] == "writer"


def test_a_readers_prefetched_answer_is_dropped_once_the_writer_writes(
    deployment: Deployment,
) -> None:
    """A reader's caches are keyed on the version the writer publishes (prefetched answers,
    `auto`'s samples): each write section must change it, or they answer from before it."""
    reader = deployment.readers[0]
    with deployment.http(deployment.writer) as http:
        body = {"text": "The refund window is 30 days.", "source": "policy/refunds"}
        assert http.post("/v1/rag/add/document", json=body).status_code == 200
    within_bound(lambda: found(reader, "refund window", "30 days"))
    asked = {"query": "refund window shipping parcels", "top_k": 5}
    with deployment.http(reader) as http:
        started = http.post("/v1/rag/search", json={**asked, "prefetch": True})
        assert started.status_code == 202, started.text
        cached = wait_for(lambda: (r := http.post("/v1/rag/search", json=asked).json()).get(
            "cached") and r)  # fmt: skip
    assert not any("5 days" in item["text"] for item in cached["results"])
    with deployment.http(deployment.writer) as http:
        body = {"text": "Parcels ship within 5 days.", "source": "policy/shipping"}
        assert http.post("/v1/rag/add/document", json=body).status_code == 200

    def fresh() -> bool:
        with deployment.http(reader) as http:
            answer = http.post("/v1/rag/search", json=asked).json()
        return "cached" not in answer and any("5 days" in i["text"] for i in answer["results"])

    within_bound(fresh)  # the prefetch's time (5 s) is longer than the bound


def test_a_jobs_listing_through_a_reader_keeps_its_query(deployment: Deployment) -> None:
    reader = deployment.readers[0]
    with deployment.http(deployment.writer) as http:
        broken = [("files", ("broken.pdf", b"%PDF-1.4\nnot really"))]
        fine = [("files", ("fine.md", b"# Fine\n\nParcels ship within 5 days.\n"))]
        ids = []
        for files in (broken, fine):
            started = http.post("/v1/collections/docs/files", files=files)
            assert started.status_code == 202, started.text
            ids.append(started.json()["id"])
            url = f"/v1/jobs/{ids[-1]}"
            wait_for(lambda u=url: http.get(u).json()["status"] in ("done", "failed"))
    with deployment.http(reader) as http:
        everything = http.get("/v1/jobs").json()["jobs"]
        failed = http.get("/v1/jobs?collection=docs&status=failed")
        done = http.get("/v1/jobs", params={"status": "done"})
    assert {job["id"] for job in everything} >= set(ids)
    assert failed.status_code == 200, failed.text
    assert [job["id"] for job in failed.json()["jobs"]] == [ids[0]]
    assert ids[1] in [job["id"] for job in done.json()["jobs"]]
    assert ids[0] not in [job["id"] for job in done.json()["jobs"]]


def test_a_reader_refuses_a_write_that_reaches_its_store(deployment: Deployment) -> None:
    """What does not come over HTTP (the MCP tools) reaches the reader's own calls: refused."""
    collection = deployment.readers[0].hub.collections["docs"]
    with pytest.raises(ReaderReadOnly, match="writer"):
        collection.writable()


def test_every_write_route_is_sent_to_the_writer_and_every_question_is_answered_here() -> None:
    from rag_api.http.forward import forwarded
    from tests.access.test_audit import NOT_WRITES, WRITES

    shared = {("DELETE", "/v1/responses/{response_id}"), ("DELETE", "/responses/{response_id}")}
    for method, template in WRITES:
        path = template.replace("{collection}", "docs").replace("{path:any}", "a.md")
        path = path.replace("{response_id}", "resp_" + "0" * 32)
        assert forwarded(method, path) == ((method, template) not in shared), (method, template)
    writer_reads = {"/v1/ops/migrate/plan"}  # a read of the store: any replica answers it
    for method, template in NOT_WRITES:
        path = template.replace("{collection}", "docs")
        assert not forwarded(method, path) or path in writer_reads, (method, template)
    writer_only = ("/v1/jobs", "/v1/jobs/j1", "/v1/ops/backups", "/v1/indexer/status")
    for path in (*writer_only, "/v1/collections/docs/sources"):
        assert forwarded("GET", path), path  # what only the writer holds
    # a DELETE is a write unless it is of the shared stored responses (a route added later too)
    assert forwarded("DELETE", "/v1/collections/docs/documents/a.md")
    for path in ("/v1/rag/status", "/v1/rag/chunks", "/collections", "/v1/models", "/metrics"):
        for method in ("GET", "HEAD", "OPTIONS"):  # a probe or a browser's preflight stays here
            assert not forwarded(method, path), (method, path)


@pytest.mark.slow
def test_a_migration_and_a_restore_are_followed_by_a_reader_querying_throughout(
    deployment: Deployment,
) -> None:
    reader = deployment.readers[0]
    with deployment.http(deployment.writer) as http:
        for n in range(6):
            text = f"Topic {n}: the refund window is {n + 10} days for plan {n}."
            body = {"text": text, "source": f"policy/{n}"}
            assert http.post("/v1/rag/upsert/document", json=body).status_code == 200
    failures: list[str] = []
    answers = [0]
    stop = threading.Event()

    def ask() -> None:
        with deployment.http(reader) as http:
            while not stop.is_set():
                response = http.post("/v1/rag/search", json={"query": "refund window plan"})
                if response.status_code != 200 or not response.json()["results"]:
                    failures.append(response.text)
                answers[0] += 1
                stop.wait(0.01)  # a steady asker, not one that holds the interpreter of all three

    asking = threading.Thread(target=ask)
    asking.start()
    try:
        with deployment.http(deployment.writer) as http:
            started = http.post("/v1/ops/backup", json={"collections": ["docs"]})
            assert started.status_code == 202, started.text
            url = f"/v1/jobs/{started.json()['id']}"
            done = wait_for(  # on a loaded machine the backup's niced writer process waits
                lambda: (j := http.get(url).json())["status"] in ("done", "failed") and j,
                timeout=120,
            )
            assert done["status"] == "done", done
            backup = http.get("/v1/ops/backups").json()["backups"][0]["path"]
            new = {"provider": "hash", "model": "hash-small", "dim": 32}
            migrated = http.post("/v1/ops/migrate", json={"collection": "docs", "embedder": new})
            assert '"event": "done"' in migrated.text, migrated.text
        within_bound(lambda: reader.hub.collections["docs"].searchable().info.dim == 32)
        with deployment.http(reader) as http:  # a restore sent through the reader
            restored = http.post("/v1/ops/restore", json={"backup": backup, "with_config": True})
        assert restored.status_code == 200, restored.text
        within_bound(lambda: reader.hub.collections["docs"].searchable().info.dim == 64)
        time.sleep(0.3)
    finally:
        stop.set()
        asking.join()
    assert answers[0] > 10
    assert not failures, failures[:3]


def test_a_reader_between_the_two_operations_of_a_replacement_answers_from_one_version(
    deployment: Deployment,
) -> None:
    """A replacement upserts the new generation, then deletes the old one: the writer is held
    between the two (its store's delete waits), and a reader searches the document then."""
    reader = deployment.readers[0]

    def notes(version: int) -> dict[str, str]:
        text = "\n\n".join(
            f"Section {n}. Release note of version {version}: item {n} changed. " * 4
            for n in range(6)
        )
        return {"text": text, "source": "notes"}

    with deployment.http(deployment.writer) as http:
        assert http.post("/v1/rag/upsert/document", json=notes(1)).status_code == 200
    store = deployment.writer_hub.store
    deleting, go_on = threading.Event(), threading.Event()

    def held_delete(*args: Any, **kwargs: Any) -> None:
        deleting.set()
        go_on.wait(30)
        type(store).delete(store, *args, **kwargs)

    store.delete = held_delete  # type: ignore[method-assign]
    replaced: list[int] = []

    def replace() -> None:
        with deployment.http(deployment.writer) as http:
            replaced.append(http.post("/v1/rag/upsert/document", json=notes(2)).status_code)

    replacing = threading.Thread(target=replace)
    replacing.start()
    try:
        assert deleting.wait(30)  # both generations are stored now
        with deployment.http(reader) as http:
            response = http.post(
                "/v1/rag/search", json={"query": "release note item changed", "top_k": 10}
            )
        assert response.status_code == 200, response.text
        texts = [item["text"] for item in response.json()["results"]]
    finally:
        go_on.set()
        replacing.join()
    assert replaced == [200]
    assert len(texts) > 1
    assert {text.split("version ")[1].split(":")[0] for text in texts} == {"2"}, texts


def test_a_stored_response_continues_on_another_reader(deployment: Deployment) -> None:
    reader1, reader2 = deployment.readers
    with deployment.http(deployment.writer) as http:
        body = {"text": "The refund window is 30 days.", "source": "policy/refunds"}
        assert http.post("/v1/rag/add/document", json=body).status_code == 200
    first = openai.OpenAI(base_url=f"{reader1.url}/v1", api_key=ADMIN)
    second = openai.OpenAI(base_url=f"{reader2.url}/v1", api_key=ADMIN)
    answered = first.responses.create(model="docs", input="How long is the refund window?")
    follow_up = second.responses.create(
        model="docs", input="And in weeks?", previous_response_id=answered.id
    )
    assert follow_up.previous_response_id == answered.id
    kept = second.responses.retrieve(answered.id)
    assert kept.id == answered.id
    second.responses.delete(answered.id)
    with pytest.raises(openai.NotFoundError):
        first.responses.retrieve(answered.id)


def test_a_key_created_rotated_and_revoked_on_the_writer_holds_on_the_readers(
    deployment: Deployment,
) -> None:
    keys = deployment.writer.hub.keyring.file  # what `rag-hub keys` edits on the writer

    def status(server: LiveServer, secret: str) -> int:
        with server.client(headers={"Authorization": f"Bearer {secret}"}) as http:
            return http.get("/v1/rag/status").status_code

    key, secret = keys.create("voice line", ["docs"], [])
    for reader in deployment.readers:
        within_bound(lambda r=reader: status(r, secret) == 200)
    _, rotated = keys.rotate(key.id, timedelta(0))
    for reader in deployment.readers:
        within_bound(lambda r=reader: status(r, rotated) == 200 and status(r, secret) == 401)
    keys.revoke(key.id)
    for reader in deployment.readers:
        within_bound(lambda r=reader: status(r, rotated) == 401)


def test_with_the_writer_stopped_reads_go_on_and_writes_get_a_clear_503(
    deployment: Deployment,
) -> None:
    reader = deployment.readers[0]
    writer = deployment.writer
    with deployment.http(writer) as http:
        body = {"text": "The refund window is 30 days.", "source": "policy/refunds"}
        assert http.post("/v1/rag/add/document", json=body).status_code == 200
    writer.stop()
    write = {"text": "Shipping takes 5 days.", "source": "policy/shipping"}
    with deployment.http(reader) as http:
        started = time.monotonic()
        refused = http.post("/v1/rag/add/document", json=write)
        elapsed = time.monotonic() - started
        assert http.post("/v1/rag/search", json={"query": "refund"}).status_code == 200
    error = assert_error_shape(refused, 503, "WRITER_UNAVAILABLE")
    assert "writer" in error["message"] and str(writer.port) in error["message"]
    assert elapsed < 5.0  # connection refused: at once, never a hang
    hub = deployment.writer_hub
    deployment.writer = deployment.serve(hub.settings, hub, writer.port)  # back, same address
    with deployment.http(reader) as http:
        assert http.post("/v1/rag/add/document", json=write).status_code == 200
    assert found(reader, "shipping", "5 days") or within_bound(
        lambda: found(reader, "shipping", "5 days")
    )


def test_a_writer_that_stops_answering_is_a_503_after_the_writer_timeout(
    deployment: Deployment,
) -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    try:
        port = silent.getsockname()[1]
        node = deployment.settings(
            "reader3", "reader", writer_url=f"http://127.0.0.1:{port}", writer_timeout_s=0.5
        )
        reader = deployment.serve(node, deployment.hub(node))
        write = {"text": "Shipping takes 5 days.", "source": "policy/shipping"}
        with deployment.http(reader) as http:
            started = time.monotonic()
            refused = http.post("/v1/rag/add/document", json=write, timeout=30)
            elapsed = time.monotonic() - started
        reader.stop()
    finally:
        silent.close()
    assert_error_shape(refused, 503, "WRITER_UNAVAILABLE")
    assert elapsed < 10.0  # the writer timeout (0.5 s), not the caller's


def test_a_second_writer_is_refused(deployment: Deployment) -> None:
    second = deployment.hub(deployment.settings("writer2", "writer"))
    with pytest.raises(AnotherWriter, match="another writer holds this deployment"):
        second.start()


@pytest.mark.parametrize("role", ["reader", "writer"])
def test_a_replica_on_the_embedded_engine_is_refused_at_start(tmp_path: Path, role: str) -> None:
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    settings = Settings(
        config=config, data_dir=tmp_path / "data", role=role, writer_url="http://127.0.0.1:9"
    )
    with pytest.raises(ConfigError, match="RAG_QDRANT_URL"):
        Hub.open(settings)
    assert not (tmp_path / "data" / "qdrant").exists()  # refused before the store was opened


def test_a_reader_before_any_writer_refuses_every_key_rather_than_opening(
    tmp_path: Path, serve: Callable[..., LiveServer]
) -> None:
    """No global key, and no keys document yet (the writer creates it): a reader stays closed."""
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    settings = Settings(
        config=config,
        data_dir=tmp_path / "reader",
        qdrant_url="http://qdrant.test:6333",
        role="reader",
        writer_url="http://127.0.0.1:9",
    )
    hub = Hub.open(settings, store=RemoteStore(":memory:"))
    try:
        with serve(settings, hub).client() as http:
            assert http.get("/health").status_code == 200
            assert_error_shape(http.get("/v1/rag/status"), 401, "UNAUTHORIZED")
    finally:
        hub.close()
