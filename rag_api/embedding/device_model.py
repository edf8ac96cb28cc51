"""A sentence-transformers model on the device its config names (docs/configuration.md, "Devices").

On the CPU at fp32 nothing changes: ONNX Runtime, or torch when the model cannot be exported (or
`runtime: torch`). Anywhere else (a GPU, or the CPU at another precision, which is how the tests
run this path) batches run on torch at that device and precision, length-sorted, GPU_BATCH texts a
call unless the config names a batch_size; the CPU path is kept beside it, for two reasons:

- identity: at start both embed the sample texts, and the device's vectors must agree with the
  CPU's (cosine >= SHARED_COSINE on each), so the collection's stored vectors, made on either
  machine, stay valid. A precision left on auto that strays falls back to fp32; one named in the
  config is refused (its vectors would be another model's: a migration, not a setting); fp32 that
  strays (a broken runtime) leaves the model on the CPU path, with a warning.
- queries: one text runs on whichever path answered it faster at start (a GPU round trip at
  batch 1 can lose to the CPU), measured over a few sample queries and said in the start line.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag_api.embedding.devices import (
    GPU_BATCH,
    SHARED_COSINE,
    Placement,
    agreement,
    announce,
    concrete,
    precision_for,
)
from rag_api.embedding.embedders import Embedder, SentenceTransformerEmbedder
from rag_api.embedding.onnx_model import SAMPLES, onnx_embedder
from rag_api.errors import ConfigError

if TYPE_CHECKING:
    from rag_api.config import EmbedderConfig
    from rag_api.settings import Settings

log = logging.getLogger("rag_api.devices")

TIMED_QUERIES = 5  # sample queries timed on each path at start (after one warm-up each)


class DeviceEmbedder(Embedder):
    """Batches on a torch model at a device and precision; one query on the faster path."""

    def __init__(
        self,
        bulk: SentenceTransformerEmbedder,
        cpu: Embedder,
        cosine: float,
        query_times: tuple[float, float],
    ) -> None:
        super().__init__(bulk.provider, bulk.model)
        self.bulk = bulk
        self.cpu = cpu
        self.cosine = cosine  # lowest cosine of the device's sample vectors to the CPU path's
        self.query_times = query_times  # seconds of one query at start: (CPU path, device)
        self.queries_on_cpu = query_times[0] <= query_times[1]

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if query and len(texts) == 1:
            path = self.cpu if self.queries_on_cpu else self.bulk
            return path.embed(texts, query=True)
        return self.bulk.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return (self.cpu if self.queries_on_cpu else self.bulk).embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return (self.cpu if self.queries_on_cpu else self.bulk).embed_passages(texts)

    @property
    def batches_queries(self) -> bool:
        return (self.cpu if self.queries_on_cpu else self.bulk).batches_queries

    def dimension(self) -> int:
        return self.cpu.dimension()

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        return self.bulk.count_tokens(texts, query=query)

    def placement(self) -> Placement:
        query_device = "cpu" if self.queries_on_cpu and self.bulk.device != "cpu" else None
        return Placement(self.bulk.device, self.bulk.precision, query_device)


def sentence_transformer_embedder(cfg: EmbedderConfig, settings: Settings) -> Embedder:
    """The model of `cfg` where its `device` and `precision` say (see the module docstring)."""
    what = f"embedder {cfg.id}"
    device = concrete(cfg.device, what)  # cuda without one: a ConfigError naming what was found
    precision = precision_for(device, cfg.precision)
    cpu = onnx_embedder(cfg, settings) if cfg.resolved_runtime != "torch" else None
    if cpu is None:  # runtime torch, or a model ONNX cannot export
        cpu = SentenceTransformerEmbedder(
            cfg.model,
            cfg.batch_size,
            bulk_threads=settings.batch_threads,
            query_threads=settings.query_threads,
        )
    if device == "cpu" and precision == "fp32":
        announce(what, cfg.device, "cpu", f" ({cpu.placement().precision})")
        return cpu
    embedder = on_device(cfg, settings, cpu, device, precision)
    if isinstance(embedder, DeviceEmbedder):
        detail = f" ({_speeds(embedder)}; cosine {embedder.cosine:.5f} to the CPU path)"
        announce(what, cfg.device, str(embedder.placement()), detail)
    return embedder


def on_device(
    cfg: EmbedderConfig, settings: Settings, cpu: Embedder, device: str, precision: str
) -> Embedder:
    """A DeviceEmbedder whose vectors agree with `cpu`'s, or `cpu` itself when fp32 on the device
    does not (with a warning); a named precision that strays is a ConfigError."""
    reference = cpu.embed(SAMPLES)
    bulk = _torch_on(cfg, settings, device, precision)
    cosine = agreement(reference, bulk.embed(SAMPLES))
    if cosine < SHARED_COSINE and precision != "fp32":
        if cfg.precision != "auto":
            raise ConfigError(
                f"embedder {cfg.id}: precision {precision} on {device} changes its vectors beyond "
                f"the bound (cosine {cosine:.5f} < {SHARED_COSINE} to the fp32 CPU path): that "
                "would be another model's vectors; use precision: fp32 (or auto)"
            )
        log.warning(
            "embedder %s: %s on %s strays from the CPU path (cosine %.5f): fp32 instead",
            cfg.id,
            precision,
            device,
            cosine,
        )
        bulk = _torch_on(cfg, settings, device, "fp32")
        cosine = agreement(reference, bulk.embed(SAMPLES))
    if cosine < SHARED_COSINE:
        log.warning(
            "embedder %s: its vectors on %s stray from the CPU path's (cosine %.5f < %s): it "
            "runs on the CPU, queries and batches alike",
            cfg.id,
            device,
            cosine,
            SHARED_COSINE,
        )
        return cpu
    return DeviceEmbedder(bulk, cpu, cosine, (_query_time(cpu), _query_time(bulk)))


def _torch_on(
    cfg: EmbedderConfig, settings: Settings, device: str, precision: str
) -> SentenceTransformerEmbedder:
    batch = cfg.batch_size if "batch_size" in cfg.model_fields_set or device == "cpu" else GPU_BATCH
    return SentenceTransformerEmbedder(
        cfg.model,
        batch,
        bulk_threads=settings.batch_threads,
        query_threads=settings.query_threads,
        device=device,
        precision=precision,
    )


def _query_time(embedder: Embedder) -> float:
    """Median seconds of one sample query (after a warm-up call)."""
    queries = [s for s in SAMPLES if len(s) < 100]
    embedder.embed(queries[:1], query=True)
    times = []
    for i in range(TIMED_QUERIES):
        started = time.perf_counter()
        embedder.embed([queries[i % len(queries)]], query=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _speeds(embedder: DeviceEmbedder) -> str:
    cpu_time, device_time = embedder.query_times
    return (
        f"a query: {cpu_time * 1000:.1f} ms on the CPU, {device_time * 1000:.1f} ms on the device"
    )
