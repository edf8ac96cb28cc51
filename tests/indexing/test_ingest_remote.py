"""A folder indexed through a model behind a server (issue 61), against a real embedding server
on loopback (tests.support.embedding_server): an input the server refuses fails its own document
only, until the server takes it; a large folder goes through in bounded memory.

The server's faults, Retry-After and the requests in flight: tests/embedding/test_embedding_server.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_api.indexing.sync import stored_files, sync_collection
from tests.conftest import REPO, cli_env, hash_collection, write_config
from tests.embedding.test_embedding_server import (
    FILES,
    SECTIONS,
    assert_each_chunk_once_with_its_own_vector,
    chunks,
    embedder_block,
    remote_hub,
    write_kb,
)
from tests.support.embedding_server import EmbeddingServer, vector

REFUSED = "UNSPEAKABLE"  # the server answers 400 to a request holding an input with it


# --- 4. a refused input --------------------------------------------------------------------------


def test_a_refused_input_fails_only_its_own_document_until_the_server_takes_it(
    tmp_path: Path, make_settings, open_hub
) -> None:
    kb = write_kb(tmp_path / "kb")
    bad = kb / "doc005.md"
    bad.write_text(bad.read_text().replace("part 2:", f"part 2 ({REFUSED}):"), encoding="utf-8")
    others = {f"doc{i:03}.md" for i in range(FILES)} - {bad.name}
    with EmbeddingServer(refused_text=REFUSED) as server:
        # requests of 16 inputs: the refused one shares its request with other files' chunks
        block = embedder_block(server, "openai", batch_size=16, concurrency=2)
        hub = remote_hub(tmp_path, kb, block, make_settings, open_hub)
        docs = hub.collection("docs")
        server.configure(refused_text=REFUSED)
        report = sync_collection(docs)
        assert set(report.errors) == {bad.name}, report.errors
        reason = report.errors[bad.name]
        assert "refused" in reason and "HTTP 400" in reason and "input refused" in reason, reason
        assert report.indexed == FILES - 1 and set(stored_files(docs)) == others
        stored = chunks(hub, "docs", with_dense=True)
        assert len(stored) == (FILES - 1) * SECTIONS
        assert all(np.allclose(r.dense, vector(r.payload["text"]), atol=1e-5) for r in stored)
        # found by halving the requests that held it, down to the one input
        refused = [r for r in server.log()["requests"] if r["status"] == 400]
        assert refused[0]["inputs"] > 1 and refused[-1]["inputs"] == 1
        assert REFUSED in refused[-1]["texts"][0]

        server.configure()  # the server takes it now: the next sync indexes the document
        again = sync_collection(docs)
        assert again.errors == {} and again.indexed == 1 and again.unchanged == FILES - 1
        assert set(stored_files(docs)) == others | {bad.name}
        assert assert_each_chunk_once_with_its_own_vector(hub) == FILES * SECTIONS


# --- 6. memory on a large folder -----------------------------------------------------------------

# The indexing process: a warm-up sync (imports, the chunker, the labeller), then the folder's,
# its anonymous memory sampled meanwhile (not the whole RSS: the embedded store maps its shard
# files, the vectors written, and those pages are the page cache's), and after it what stays
# (the freed memory given back first: malloc_trim). Groups of GROUP chunks, not 2048, so that a
# folder of a few thousand files spans many of them.
CHILD = r"""
import ctypes, gc, json, re, sys, threading
from pathlib import Path
from rag_api.hub import Hub
from rag_api.indexing import pipeline
from rag_api.indexing.sync import sync_collection
from rag_api.settings import Settings

def anon_kb():
    return int(re.search(r"RssAnon:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))

pipeline.GROUP_CHUNKS = int(sys.argv[3])
hub = Hub.open(Settings(config=sys.argv[1], data_dir=sys.argv[2]))
sync_collection(hub.collection("warm"))
trim = ctypes.CDLL("libc.so.6").malloc_trim
gc.collect()
trim(0)
start = anon_kb()
peak = [start]
done = threading.Event()

def sample():
    while not done.wait(0.01):
        peak[0] = max(peak[0], anon_kb())

sampler = threading.Thread(target=sample)
sampler.start()
report = sync_collection(hub.collection("big"))
done.set()
sampler.join()
indexed, errors, written = report.indexed, len(report.errors), report.stats.written
top = max(peak[0], anon_kb())
del report
gc.collect()
trim(0)
print(json.dumps({
    "growth": (top - start) * 1024,
    "kept": (anon_kb() - start) * 1024,
    "indexed": indexed,
    "errors": errors,
    "chunks": written,
}))
hub.close()
"""
BIG_DIM = 4096  # 16 KB a vector: what a chunk's vector costs dwarfs the store's own per point
GROUP = 256
CHUNKS_A_FILE = 2


def write_files(root: Path, files: int) -> Path:
    root.mkdir(parents=True)
    for i in range(files):
        parts = "".join(
            f"## Part {k}\n\n"
            + " ".join(
                f"Item {i} part {k} line {j} notes the value {i * 7 + j * 3}." for j in range(8)
            )
            + "\n\n"
            for k in range(CHUNKS_A_FILE)
        )
        (root / f"f{i:05}.md").write_text(f"# File {i}\n\n{parts}", encoding="utf-8")
    return root


def indexing_growth(tmp_path: Path, server: EmbeddingServer, files: int) -> dict[str, Any]:
    """Index a folder of `files` files in a process of its own: its memory's peak growth."""
    root = tmp_path / f"{files}"
    block = embedder_block(server, "openai", dim=BIG_DIM, batch_size=64, concurrency=4)
    chunking = {"size": 1000, "overlap": 50}
    collections = {
        name: hash_collection(write_files(root / name, n), embedder=block, chunking=chunking)
        for name, n in (("warm", 20), ("big", files))
    }
    config = write_config(root / "c.yaml", collections)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(config), str(root / "data"), str(GROUP)],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=REPO,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["errors"] == 0 and measured["indexed"] == files, measured
    assert measured["chunks"] == files * CHUNKS_A_FILE, measured
    return measured


@pytest.mark.slow
@pytest.mark.serial  # two processes busy for half a minute, the memory sampled every 10 ms
def test_a_large_folder_is_indexed_in_memory_that_does_not_grow_with_it(tmp_path: Path) -> None:
    small, large = 1000, 4000
    with EmbeddingServer(latency_s=0.01, dim=BIG_DIM) as server:
        base = indexing_growth(tmp_path, server, small)
        grown = indexing_growth(tmp_path, server, large)
    mib = lambda n: f"{n / 2**20:.0f} MiB"  # noqa: E731
    vectors = large * CHUNKS_A_FILE * BIG_DIM * 4
    # all the chunks held at once would take at least their vectors
    assert grown["growth"] < vectors, f"{large} files: {mib(grown['growth'])} at the peak"
    # what the sync held at its peak beyond what stays (the store keeps a few KB a point): a few
    # groups of chunks, as many for 4000 files as for 1000, where holding every chunk would
    # take the extra chunks' vectors more
    held = {run["chunks"]: run["growth"] - run["kept"] for run in (base, grown)}
    extra_vectors = (large - small) * CHUNKS_A_FILE * BIG_DIM * 4
    more = held[large * CHUNKS_A_FILE] - held[small * CHUNKS_A_FILE]
    assert more < extra_vectors / 4, (
        f"held at the peak: {', '.join(f'{n} chunks {mib(b)}' for n, b in held.items())}; "
        f"the {(large - small) * CHUNKS_A_FILE} extra chunks' vectors are {mib(extra_vectors)}"
    )
