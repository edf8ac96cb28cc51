"""Folder -> collection: idempotent, incremental, deletions follow, bad files reported, API chunks kept."""

from __future__ import annotations

import inspect
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag_api.errors import DimensionMismatch, EmbedderMismatch, EmbedderUnavailable
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.sync import stored_files, sync_collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.store import Selector
from tests.conftest import hash_collection, write_config
from tests.support.fakes import FakeOllama
from tests.support.threads import blocked_at
from tests.support.writes import replace_source


def section(title: str, words: str, n: int = 4) -> str:
    body = " ".join(
        f"{words.capitalize()} fact {i} is written down here for the record." for i in range(n)
    )
    return f"## {title}\n\n{body}\n\n"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "sub").mkdir(parents=True)
    (root / "faq.md").write_text(
        "# FAQ\n\n" + section("Refunds", "refund") + section("Trial", "trial")
    )
    (root / "sub" / "notes.txt").write_text("Plain notes about the office coffee machine.")
    (root / "lines.jsonl").write_text(
        '{"text": "Pre-chunked line", "source": "faq_lines", "chunk_index": 0}\n'
    )
    return root


@pytest.fixture
def hub(kb: Path, tmp_path: Path, engine: str, make_settings, open_hub) -> Hub:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})
    return open_hub(make_settings(config, engine))


def points(hub: Hub) -> list[dict]:
    collection = hub.collection("docs")
    return [r.payload for r in hub.store.iter_records(collection.info(refresh=True).physical)]


def test_index_twice_embeds_nothing_the_second_time(hub: Hub) -> None:
    docs = hub.collection("docs")
    first = sync_collection(docs)
    assert (first.files, first.indexed, first.unchanged) == (3, 3, 0)
    assert first.stats.embedded == first.stats.written > 3
    second = sync_collection(docs)
    assert (second.indexed, second.unchanged, second.stats.embedded, second.stats.written) == (
        0,
        3,
        0,
        0,
    )
    payloads = points(hub)
    assert len(payloads) == first.stats.written
    assert not [
        k for k, n in Counter((p["source"], p["chunk_index"]) for p in payloads).items() if n > 1
    ]
    line = next(p for p in payloads if p["source"] == "faq_lines")
    assert (
        line["file"] == "lines.jsonl"
        and line["origin"] == "file"
        and line["embedder"] == "hash:hash-test"
    )


def test_an_edit_reembeds_only_changed_chunks(hub: Hub, kb: Path) -> None:
    docs = hub.collection("docs")
    sync_collection(docs)
    faq = kb / "faq.md"
    faq.write_text(faq.read_text().replace("Trial fact 2", "Trial fact two"))
    report = sync_collection(docs)
    assert report.indexed == 1 and report.stats.embedded == 1 and report.stats.reused >= 1
    new_hash = {p["doc_hash"] for p in points(hub) if p.get("file") == "faq.md"}
    assert len(new_hash) == 1  # every chunk of the file carries the file's current hash


def test_shrunk_and_deleted_files_lose_their_chunks(hub: Hub, kb: Path) -> None:
    docs = hub.collection("docs")
    sync_collection(docs)
    before = Counter(p["source"] for p in points(hub))
    (kb / "faq.md").write_text("# FAQ\n\n" + section("Refunds", "refund"))
    (kb / "sub" / "notes.txt").unlink()
    report = sync_collection(docs)
    after = Counter(p["source"] for p in points(hub))
    assert report.removed == 1 and "sub/notes.txt" not in after
    assert after["faq.md"] < before["faq.md"]
    assert report.stats.deleted == (before["faq.md"] - after["faq.md"]) + before["sub/notes.txt"]
    assert set(stored_files(docs)) == {"faq.md", "lines.jsonl"}


def test_api_chunks_survive_the_reconcile(hub: Hub) -> None:
    docs = hub.collection("docs")
    sync_collection(docs)
    chunk = Chunk("Added through the API", "crm/cliente_456", 0, {"cliente_id": 456})
    replace_source(
        docs, "crm/cliente_456", [chunk], {"origin": "api", "persist": True, "dynamic": True}
    )
    sync_collection(docs, force=True)
    assert any(p["source"] == "crm/cliente_456" for p in points(hub))


def test_bad_files_are_reported_and_the_rest_indexed(hub: Hub, kb: Path) -> None:
    (kb / "binary.md").write_bytes(b"\x00\x01\x02 PNG" * 100)
    (kb / "broken.jsonl").write_text('{"text": "good line"}\n{not json\n')
    (kb / "empty.txt").write_text("")
    report = sync_collection(hub.collection("docs"))
    assert "binary" in report.errors["binary.md"]
    assert report.warnings["broken.jsonl"] == [
        "line 2: invalid JSON (Expecting property name enclosed in double quotes)"
    ]
    sources = {p["source"] for p in points(hub)}
    assert {"faq.md", "sub/notes.txt", "broken.jsonl#line1"} <= sources
    assert not any(s.startswith(("binary", "empty")) for s in sources)


def test_force_reembeds_everything(hub: Hub) -> None:
    docs = hub.collection("docs")
    first = sync_collection(docs)
    forced = sync_collection(docs, force=True)
    assert forced.indexed == 3 and forced.stats.written == first.stats.written
    assert forced.stats.embedded == first.stats.embedded and forced.stats.reused == 0


def test_dimension_mismatch_refuses_writes(
    tmp_path: Path, kb: Path, make_settings, open_hub
) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, dim=64)})
    settings = make_settings(config)
    hub = open_hub(settings)
    sync_collection(hub.collection("docs"))
    hub.close()
    write_config(config, {"docs": hash_collection(kb, dim=128)})
    hub = open_hub(settings)
    with pytest.raises(DimensionMismatch) as caught:
        sync_collection(hub.collection("docs"))
    message = caught.value.message
    assert (
        "64-dimensional" in message
        and "configures 128" in message
        and "rag-hub migrate docs" in message
    )
    hub.close()
    swapped = hash_collection(kb, dim=64, embedder={"model": "another-hash"})
    write_config(config, {"docs": swapped})
    hub = open_hub(settings)
    with pytest.raises(
        EmbedderMismatch, match="holds vectors of hash:hash-test .* configures hash:another-hash"
    ):
        sync_collection(hub.collection("docs"))
    # same dimension, another model: its query vectors would score meaninglessly, so no search
    with pytest.raises(EmbedderMismatch, match="queries are refused until you run"):
        search(hub.collection("docs"), SearchRequest(query="refund"))


def test_embedder_outage_writes_nothing(
    tmp_path: Path, kb: Path, fake_ollama: FakeOllama, make_settings, open_hub
) -> None:
    # no retries: the first 500 gives up (retries: tests/embedding/test_embedding_server.py)
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768, "retry_wait_s": 0}
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=embedder)})
    hub = open_hub(make_settings(config, ollama_url=fake_ollama.url))
    docs = hub.collection("docs")
    sync_collection(docs)
    count = docs.store.count(docs.info().physical)
    (kb / "faq.md").write_text("# Changed\n\n" + section("New", "novel", 8))
    fake_ollama.fail(status=500, times=5)
    with pytest.raises(EmbedderUnavailable):
        sync_collection(docs)
    assert docs.store.count(docs.info().physical, Selector(files=("faq.md",))) > 0
    assert docs.store.count(docs.info().physical) == count  # the old version is intact


def _syncing_line() -> int:
    """The line where sync_collection takes the collection's one-reconcile-at-a-time lock (0 if
    it takes none: then no thread is ever seen waiting there, and the held embed below waits
    for the second request that a missing lock lets through)."""
    lines, start = inspect.getsourcelines(sync_collection)
    found = [n for n, line in enumerate(lines) if "with collection.syncing" in line]
    return start + found[0] if found else 0


class RendezvousOllama(FakeOllama):
    """Ollama whose /api/embed, once armed, holds a request until a second one arrives, or until
    another reconcile is seen waiting for the first (`arm(waiting)`): two reconciles that
    both decided to embed the same file meet here and both embed it; one that waits for the
    other's lock lets the first go on alone. No clock: a loaded machine only makes it slower."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals = 0
        self.changed = threading.Condition()
        self.waiting: Callable[[], bool] = lambda: True  # not armed: answer at once
        self.routes[("POST", "/api/embed")] = self._held_embed

    def arm(self, waiting: Callable[[], bool]) -> None:
        with self.changed:
            self.arrivals, self.waiting = 0, waiting

    def _held_embed(self, request):
        deadline = time.monotonic() + HELD_EMBED_LIMIT_S
        with self.changed:
            self.arrivals += 1
            self.changed.notify_all()
            while not (self.arrivals >= 2 or self.waiting()):
                assert time.monotonic() < deadline, "no second request, no reconcile waiting"
                self.changed.wait(0.005)  # a thread's state changes without a notification
        return self._embed(request)


HELD_EMBED_LIMIT_S = 120  # only a hang ends here


def test_two_reconciles_at_once_embed_a_new_file_once(
    tmp_path: Path, kb: Path, make_settings, open_hub
) -> None:
    """The watcher and an upload's job (or a reload) syncing the same new file at the same time:
    the second waits for the first, then finds its chunks stored and embeds nothing."""
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=embedder)})
    with RendezvousOllama() as ollama:
        hub = open_hub(make_settings(config, ollama_url=ollama.url))
        docs = hub.collection("docs")
        sync_collection(docs)
        (kb / "new.md").write_text("# New\n\n" + section("Fresh", "fresh", 6))
        embeds_before = len(ollama.calls("/api/embed"))
        line = _syncing_line()
        with ThreadPoolExecutor(2, thread_name_prefix="reconcile") as pool:
            ollama.arm(
                lambda: any(
                    blocked_at(t, "sync_collection", line)
                    for t in threading.enumerate()
                    if t.name.startswith("reconcile")
                )
            )
            reports = list(pool.map(lambda _: sync_collection(docs, only=["new.md"]), range(2)))
        embedded = [report.stats.embedded for report in reports]
        assert sorted(embedded)[0] == 0 and sorted(embedded)[1] > 0
        assert len(ollama.calls("/api/embed")) - embeds_before == 1
        assert docs.count(Selector(files=("new.md",))) == sorted(embedded)[1]
