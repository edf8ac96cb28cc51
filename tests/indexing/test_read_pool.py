"""Reading a big sync's files in worker processes (rag_api.indexing.read_pool): the same chunks as
reading them here, in the files' order, bad files reported the same way, a killed worker costing
nothing but its speed, and small syncs never starting a pool."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing import read_pool
from rag_api.indexing.chunking import ReadResult, UnreadableFile, read_chunks
from rag_api.indexing.kb import KbFile
from rag_api.indexing.read_pool import POOL_MIN_FILES, FileReader
from rag_api.indexing.sync import file_reader, sync_collection
from tests.conftest import hash_collection, minilm_collection, write_config

CHUNKING = ChunkingConfig(size=64, overlap=8)
FOOTER = (  # a chunk of its own at the collection's 200 characters
    "Our support team replies to every message within one working day, from Monday to Friday, "
    "all year round."
)
READY_S = 120  # a worker's start: a fork, and the splitter's sentence model loaded


def write_files(root: Path, n: int) -> list[KbFile]:
    """`n` markdown files of several chunks each, all ending in the same footer (boilerplate once
    the collection has seen it repeated), one binary file among them, one PDF (which OCR may
    read: it is read here)."""
    root.mkdir(parents=True, exist_ok=True)
    items = []
    for i in range(n):
        path = root / f"doc{i:04d}.md"
        if i == 7:
            path.write_bytes(b"\x00\x01binary\x00")
        else:
            body = " ".join(f"Fact {j} of document {i} is written down here." for j in range(30))
            path.write_text(f"# Document {i}\n\n{body}\n\nThe end of document {i}.\n\n{FOOTER}\n")
        items.append(KbFile(path.name, path, path.stat().st_size))
    pdf = root / "scan.pdf"
    pdf.write_bytes(b"%PDF-1.4 not really a pdf")
    items.insert(3, KbFile(pdf.name, pdf, pdf.stat().st_size))
    return items


def read_here_recorder(read: list[str]):
    def read_here(item: KbFile) -> ReadResult:
        read.append(item.rel)
        return read_chunks(item.path, item.rel, CHUNKING)

    return read_here


def expected(items: list[KbFile]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for item in items:
        try:
            result = read_chunks(item.path, item.rel, CHUNKING)
            out.append((item.rel, [(c.text, c.chunk_index, c.title) for c in result.chunks]))
        except UnreadableFile as exc:
            out.append((item.rel, f"unreadable: {exc}"))
    return out


def outcome(rel: str, result: read_pool.Read) -> tuple[str, object]:
    if isinstance(result, UnreadableFile):
        return rel, f"unreadable: {result}"
    return rel, [(c.text, c.chunk_index, c.title) for c in result.chunks]


def ready_reader(items: list[KbFile], read_here) -> FileReader:
    reader = FileReader(CHUNKING, "en", read_here, workers=1, nice=0, files=len(items))
    assert reader.pool is not None
    assert reader.pool.wait_ready(READY_S)
    return reader


@pytest.mark.slow
def test_workers_read_the_same_chunks_in_order_and_report_bad_files_the_same(
    tmp_path: Path,
) -> None:
    items = write_files(tmp_path / "kb", POOL_MIN_FILES)
    here: list[str] = []
    reader = ready_reader(items, read_here_recorder(here))

    got = [outcome(item.rel, result) for item, _, result in reader.read((i, None) for i in items)]

    assert got == expected(items)
    assert here == ["scan.pdf"]  # what OCR may read is read here, with its page progress
    assert reader.in_workers == len(items) - 1
    assert read_pool.worker_pids()  # kept for the next big sync


@pytest.mark.slow
def test_a_killed_worker_costs_the_sync_nothing_but_speed(tmp_path: Path) -> None:
    items = write_files(tmp_path / "kb", POOL_MIN_FILES)
    here: list[str] = []
    reader = ready_reader(items, read_here_recorder(here))
    got = []
    for n, (item, _, result) in enumerate(reader.read((i, None) for i in items)):
        got.append(outcome(item.rel, result))
        if n == 20:
            for pid in read_pool.worker_pids():
                os.kill(pid, signal.SIGKILL)

    assert got == expected(items)
    assert 20 <= reader.in_workers < len(items) - 20  # the rest was read here
    assert len(here) > 20
    assert reader.pool is None


def test_a_small_sync_reads_here_without_a_pool(tmp_path: Path) -> None:
    items = write_files(tmp_path / "kb", 5)
    here: list[str] = []
    reader = FileReader(CHUNKING, "en", read_here_recorder(here), 1, 0, POOL_MIN_FILES - 1)

    got = [outcome(item.rel, result) for item, _, result in reader.read((i, None) for i in items)]

    assert reader.pool is None
    assert got == expected(items)
    assert here == [item.rel for item in items]


def test_no_workers_reads_here_however_many_files(tmp_path: Path) -> None:
    items = write_files(tmp_path / "kb", 3)
    here: list[str] = []
    reader = FileReader(CHUNKING, "en", read_here_recorder(here), 0, 0, 10 * POOL_MIN_FILES)

    got = [outcome(item.rel, result) for item, _, result in reader.read((i, None) for i in items)]

    assert reader.pool is None
    assert got == expected(items)
    assert here == [item.rel for item in items]


@pytest.fixture
def big_kb(tmp_path: Path) -> Path:
    write_files(tmp_path / "kb", POOL_MIN_FILES + 10)
    return tmp_path / "kb"


def stored(hub: Hub) -> dict[str, list[tuple]]:
    """Each file's points as stored: chunk number, text, title, labels, BM25 vector."""
    physical = hub.collection("docs").info(refresh=True).physical
    by_file: dict[str, list[tuple]] = {}
    for page in hub.store.export(physical):
        for point in page:
            body = point.payload
            sparse = (tuple(point.sparse.indices), tuple(point.sparse.values))
            labels = (body["type"], body["quality"], tuple(body["quality_reasons"]))
            own = (body["chunk_index"], body["text"], body.get("title"), labels, sparse)
            by_file.setdefault(body["file"], []).append(own)
    return {rel: sorted(chunks) for rel, chunks in by_file.items()}


@pytest.mark.slow
def test_a_big_sync_read_by_workers_stores_what_reading_here_stores(
    big_kb: Path, tmp_path: Path, make_settings, open_hub
) -> None:
    results = {}
    for workers in (1, 0):
        config = write_config(tmp_path / f"c{workers}.yaml", {"docs": hash_collection(big_kb)})
        settings = make_settings(config, data_dir=tmp_path / f"data{workers}", read_workers=workers)
        if workers:  # the pool ready before the sync: every file but the PDF read by it
            FileReader(CHUNKING, "en", read_chunks, workers, 0, POOL_MIN_FILES).pool.wait_ready(
                READY_S
            )
        hub = open_hub(settings)
        report = sync_collection(hub.collection("docs"))
        results[workers] = (stored(hub), report.errors, report.indexed)

    assert results[1] == results[0]
    assert set(results[1][1]) == {"doc0007.md", "scan.pdf"}
    footers = [own[3][0] for chunks in results[1][0].values() for own in chunks if FOOTER in own[1]]
    assert footers and set(footers) == {"boilerplate"}  # the census decides, not the worker


def test_a_model_on_the_hubs_cpu_keeps_every_core_unless_told(
    tmp_path: Path, make_settings, open_hub
) -> None:
    """An in-process model on the CPU takes every core: a reading worker would slow it."""
    gpu = minilm_collection()
    gpu["embedder"] = {**gpu["embedder"], "device": "cuda"}
    collections = {
        "served": hash_collection(),  # no model here: the pool reads beside the writing
        "model": minilm_collection(),
        "gpu": gpu,
    }
    config = write_config(tmp_path / "c.yaml", collections)
    hub = open_hub(make_settings(config))
    pools = {name: file_reader(hub.collection(name), POOL_MIN_FILES).pool for name in collections}
    assert pools["model"] is None
    expected_pool = read_pool.default_workers() > 0  # none on one core
    assert (pools["served"] is not None, pools["gpu"] is not None) == (expected_pool,) * 2

    told = make_settings(config, data_dir=tmp_path / "told", read_workers=1)
    hub = open_hub(told)
    assert file_reader(hub.collection("model"), POOL_MIN_FILES).pool is not None
