"""SIGKILL the indexer in the middle of indexing 200 files; after a restart the collection equals a
clean index of the folder: same points, no duplicates, no orphans."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing import kb
from rag_api.indexing.sync import sync_collection
from rag_api.settings import Settings
from tests.conftest import hash_collection, wait_for, write_config

FILES = 200
WORDS = "tide reef kelp gull crab shell dune surf wave foam salt spray coral pier buoy".split()


def write_kb(root: Path, version: int) -> None:
    """200 text files of 8 paragraphs; version 2 changes every file and leaves fewer chunks."""
    for n in range(FILES):
        paragraphs = [
            " ".join(WORDS[(n * 7 + p * 3 + i * version) % len(WORDS)] for i in range(30))
            + f" doc{n}p{p}v{version}."
            for p in range(8 if version == 1 else 3 + n % 4)
        ]
        folder = root / f"sub{n % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:03}.txt").write_text(f"File {n}\n\n" + "\n\n".join(paragraphs))


def snapshot(settings: Settings) -> dict[tuple[str, int], tuple[dict, np.ndarray]]:
    """Every point of the collection: (source, chunk_index) -> (payload, vector); fails on duplicates."""
    hub = Hub.open(settings)
    try:
        info = hub.collection("notes").info(refresh=True)
        records = list(hub.store.iter_records(info.physical, with_dense=True))
    finally:
        hub.close()
    keys = [(r.payload["source"], r.payload["chunk_index"]) for r in records]
    assert len(keys) == len(set(keys)), "duplicate (source, chunk_index)"
    return {key: (r.payload, np.asarray(r.dense)) for key, r in zip(keys, records, strict=True)}


def index_clean(settings: Settings) -> ChunkingConfig:
    """Index the folder from scratch in this process; returns the collection's chunking."""
    hub = Hub.open(settings)
    try:
        collection = hub.collection("notes")
        assert sync_collection(collection).indexed == FILES
        return collection.cfg.chunking
    finally:
        hub.close()


@pytest.mark.slow
def test_killed_mid_index_then_restarted_equals_a_clean_index(tmp_path: Path, spawn) -> None:
    root = tmp_path / "kb"
    write_kb(root, version=1)
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(root)})
    settings = Settings(config=config, data_dir=tmp_path / "data")
    index_clean(settings)
    write_kb(root, version=2)  # edited while the indexer was down: stale chunks everywhere
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(settings.data_dir)}
    env |= {"RAG_WATCH_DEBOUNCE_S": "0", "RAG_WATCH_RESCAN_S": "0"}

    first = spawn("watch", env=env)
    wait_for(lambda: first.count("notes: indexed") >= 5, 60, interval=0.01)
    first.stop(signal.SIGKILL)
    assert first.count("notes: reconciled") == 0, "the kill came too late to test anything"
    before_kill = first.count("notes: indexed")
    assert before_kill < FILES

    second = spawn("watch", env=env)
    wait_for(lambda: second.count("notes: reconciled") == 1, 120)
    assert second.stop() == 0
    assert second.count("notes: indexed") <= FILES - before_kill + 1  # finished files not redone

    crashed = snapshot(settings)
    clean_settings = Settings(config=config, data_dir=tmp_path / "clean")
    chunking = index_clean(clean_settings)
    clean = snapshot(clean_settings)

    assert len(crashed) == len(clean) and crashed.keys() == clean.keys()
    fields = ("text", "file", "content_hash", "doc_hash", "origin", "embedder")
    for key, (payload, vector) in crashed.items():
        clean_payload, clean_vector = clean[key]
        assert {f: payload[f] for f in fields} == {f: clean_payload[f] for f in fields}, key
        np.testing.assert_allclose(vector, clean_vector, atol=1e-6)
        # no orphan: every chunk belongs to a file that is there, with that very content
        assert payload["doc_hash"] == kb.doc_hash((root / payload["file"]).read_bytes(), chunking)
