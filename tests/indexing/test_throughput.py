"""A sync's pace as it goes: `rag-hub index`'s bar shows chunks/s, the embedding server's latency
and its retries; a source sync's job shows them in /v1/jobs; the metrics count each retry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, WriteStats
from rag_api.indexing.pipeline import Pipeline
from rag_api.store import Selector
from tests.conftest import hash_collection, run_cli, write_config
from tests.sources.conftest import finished
from tests.sources.test_git import FILES, git_block
from tests.support.embedding_server import EmbeddingServer
from tests.support.git_repo import Repo


def _served(server: EmbeddingServer, **block: Any) -> dict[str, Any]:
    embedder = {"provider": "openai", "model": "e", "dim": 64, "base_url": server.openai_url}
    return hash_collection(embedder=embedder, **block)


def _retries(reason: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "rag_embedding_retries_total", {"provider": "openai", "reason": reason}
        )
        or 0.0
    )


@pytest.mark.slow
def test_rag_hub_index_shows_the_pace_the_servers_latency_and_its_retries(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(6):
        (kb / f"note{n}.md").write_text(f"# Note {n}\n\nParcel {n} ships within {n + 2} days.\n")
    fault = {"kind": "503", "from_inputs": 2}  # not the one-text check of the model's dimension
    with EmbeddingServer(latency_s=0.03, faults=[fault]) as server:
        config = write_config(tmp_path / "c.yaml", {"docs": _served(server, kb=str(kb))})
        env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}
        done = run_cli("index", env=env)
        answered = [r for r in server.log()["requests"] if r["status"] == 200]
    assert done.returncode == 0, done.stderr
    assert "6 indexed" in done.stdout
    bar = done.stderr.replace("\r", "\n").strip().splitlines()[-1]
    found = re.search(r"([\d,]+) chunks/s, server (\d+) ms, 1 retry\b", bar)
    assert found, bar
    assert int(found[1].replace(",", "")) > 0  # the chunks written by the last file count
    assert int(found[2]) > 0  # the server's latency, as the hub saw it (its 503 within)
    assert answered  # what the bar counts came from the server


def test_a_source_syncs_job_shows_the_servers_latency_and_retries(
    tmp_path: Path, make_settings, serve
) -> None:
    repo = Repo(tmp_path / "repos" / "handbook")
    repo.write(FILES).commit()
    with EmbeddingServer(latency_s=0.02) as server:
        block = _served(server, sources=[git_block(str(repo.path))])
        config = write_config(tmp_path / "c.yaml", {"docs": block})
        http = serve(make_settings(config)).client()
        server.configure(
            latency_s=0.02, faults=[{"kind": "429", "times": 2}]
        )  # started: the sync's
        before = _retries("429")
        job = http.post("/v1/collections/docs/sources/handbook/sync").json()
        done = finished(http, job["id"])
    assert done["status"] == "done" and done["result"]["indexed"] == 4
    detail = done["progress"]["detail"]
    assert detail["embedding_retries"] == 2 and detail["embedding_latency_ms"] > 0
    assert detail["chunks_per_s"] > 0
    assert _retries("429") - before == 2


def test_a_documents_chunks_are_counted_before_it_is_reported(
    tmp_path: Path, make_settings, open_hub
) -> None:
    """What a progress callback shows (the bar's chunks/s) already counts the document it is
    told of: the last file of a sync is not missing from the rate."""
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None)})
    collection = open_hub(make_settings(config)).collection("docs")
    counted: list[tuple[int, int]] = []  # chunks written so far, chunks the pace had counted

    def done(write: DocumentWrite, stats: WriteStats) -> None:
        total = (counted[-1][0] if counted else 0) + stats.written
        counted.append((total, pipeline.throughput.chunks))

    with Pipeline(collection, done, lambda write, reason: None) as pipeline:
        for n in range(5):
            chunks = [Chunk(f"Note {n}, part {i}.", f"api/{n}", i) for i in range(n + 1)]
            pipeline.put(DocumentWrite(collection, Selector(sources=(f"api/{n}",)), chunks, {}))
    assert [paced for _, paced in counted] == [total for total, _ in counted] == [1, 3, 6, 10, 15]
