"""ONNX Runtime for in-process sentence-transformers models: a one-time export, cached on disk,
with a query session and a batch session per model (docs/architecture.md, "ONNX Runtime")."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_api.atomic import publish_folder
from rag_api.embedding.batch_threads import batch_workers
from rag_api.embedding.devices import Placement
from rag_api.embedding.embedders import Embedder, load_sentence_transformer, local_model_path
from rag_api.embedding.onnx_export import FP32_FILE, INT8_FILE, export_pipeline, quantize
from rag_api.errors import ConfigError

if TYPE_CHECKING:
    from rag_api.config import EmbedderConfig
    from rag_api.settings import Settings

log = logging.getLogger("rag_api.onnx")

# what one ONNX Runtime call embeds when the config names no batch_size: texts up to this many
# characters (at least one), so a full chunk goes alone and short texts a few together. Small
# calls keep their activations in the caches: on 2 cores 1-4 texts a call embed ~1.5x the chunks/s
# of 32 a call (the figures: docs/performance.md, "ONNX call size").
CALL_CHARS = 512
EXPORT_VERSION = 2  # bump when the export recipe changes: every cached model is rebuilt
MIN_COSINE = 0.9999  # fp32 export vs torch, per sample text
RUNTIMES = ("torch", "onnx", "onnx-int8")
SAMPLES = (
    "How many days do I have to ask for a refund?",
    "¿Cuánto dura el periodo de devolución?",
    "AES-256 protects data at rest; TLS 1.3 protects it in transit.",
    "a",
    "The quick brown fox jumps over the lazy dog. " * 40,  # past max_seq_length: truncation
)


@dataclass(frozen=True)
class OnnxBuild:
    """An exported model in the cache: its folder and what the manifest says."""

    folder: Path
    manifest: dict

    def model_file(self, runtime: str) -> Path:
        return self.folder / (INT8_FILE if runtime == "onnx-int8" else FP32_FILE)


def source_files(source: Path) -> list[Path]:
    """The files of a sentence-transformers folder that the export depends on."""
    skip = {"README.md", ".gitattributes"}
    return sorted(
        p for p in source.rglob("*") if p.is_file() and p.name not in skip and ".onnx" not in p.name
    )


def cache_key(source: Path) -> str:
    """Changes when any source file changes (path, size, mtime) or the export recipe does."""
    digest = hashlib.sha256(f"v{EXPORT_VERSION}".encode())
    for path in source_files(source):
        stat = path.stat()
        digest.update(f"{path.relative_to(source)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_folder(cache_root: Path, name: str, source: Path) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[-64:]
    return cache_root / f"{safe}-{cache_key(source)}"


def onnx_embedder(cfg: EmbedderConfig, settings: Settings) -> OnnxEmbedder | None:
    """The model of `cfg` on ONNX Runtime, exported on first use. With the runtime left unset, a
    model that cannot be exported (not a local folder, an architecture the exporter refuses, a
    vector that differs from torch) gives None, and the caller serves it on torch."""
    runtime = cfg.resolved_runtime
    try:
        source = _source_folder(cfg.model)
        build = ensure_build(settings.models_path, cfg.model, source, runtime)
    except Exception as exc:
        if cfg.runtime is not None:
            raise ConfigError(
                f"embedder {cfg.id} cannot run on {runtime}: {exc}; use runtime: torch"
            ) from exc
        log.warning("embedder %s stays on torch: the ONNX export failed (%s)", cfg.id, exc)
        return None
    return OnnxEmbedder(
        cfg.model,
        build,
        runtime,
        source,
        cfg.batch_size if "batch_size" in cfg.model_fields_set else None,
        query_threads=settings.query_threads,
        bulk_threads=settings.batch_threads,
        batch_nice=settings.batch_nice,
    )


def _source_folder(model: str) -> Path:
    """The local folder of a sentence-transformers model: a path, the bundled MiniLM, or a model
    already in the local Hugging Face cache."""
    path = Path(local_model_path(model))
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(model, local_files_only=True))


def ensure_build(cache_root: Path, name: str, source: Path, runtime: str) -> OnnxBuild:
    """The cached export of `source` for `runtime`, exported (and quantised) on first use."""
    folder = cache_folder(cache_root, name, source)
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        _export(folder, name, source)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    build = OnnxBuild(folder, manifest)
    if runtime == "onnx-int8" and not build.model_file(runtime).exists():
        quantize(folder)
    return build


def verify_build(build: OnnxBuild, source: Path) -> list[str]:
    """Problems of a cached export against its source files (empty when it matches)."""
    problems = []
    recorded = build.manifest.get("sources", {})
    for path in source_files(source):
        rel = str(path.relative_to(source))
        if recorded.get(rel) != file_sha256(path):
            problems.append(f"{rel} changed since the ONNX export")
    for rel in set(recorded) - {str(p.relative_to(source)) for p in source_files(source)}:
        problems.append(f"{rel} is gone since the ONNX export")
    if not (build.folder / FP32_FILE).exists():
        problems.append(f"{FP32_FILE} is missing")
    return problems


def _export(folder: Path, name: str, source: Path) -> None:
    """Export, verify, then publish the folder whole (rag_api.atomic)."""
    print(f"exporting {name} to ONNX Runtime (once; cached in {folder})", file=sys.stderr)

    def export_into(work: Path) -> dict:
        manifest = _export_into(work, source)
        manifest["sources"] = {
            str(p.relative_to(source)): file_sha256(p) for p in source_files(source)
        }
        return manifest

    publish_folder(folder, export_into)


def _export_into(work: Path, source: Path) -> dict:
    """Export (rag_api.embedding.onnx_export), then check every sample text against the torch path."""
    manifest = {
        "export_version": EXPORT_VERSION,
        **export_pipeline(work, source, list(SAMPLES[:2])),
    }
    reference = load_sentence_transformer(str(source)).encode(
        list(SAMPLES), normalize_embeddings=True, convert_to_numpy=True
    )
    tokenizer_file = work / "tokenizer.json"
    exported = OnnxSession(work / FP32_FILE, tokenizer_file, manifest, threads=1).embed(SAMPLES)
    cosines = (np.asarray(reference) * exported).sum(axis=1)
    manifest["min_cosine_to_torch"] = round(float(cosines.min()), 6)
    if cosines.min() < MIN_COSINE:
        raise ConfigError(
            f"the ONNX export of {source} differs from torch (cosine {cosines.min():.5f} < "
            f"{MIN_COSINE}); use runtime: torch for this model"
        )
    return manifest


class OnnxSession:
    """One ONNX Runtime session with the model's tokenizer; thread-safe."""

    def __init__(self, model_file: Path, tokenizer_file: Path, manifest: dict, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(manifest["max_seq_length"])
        pad = self._tokenizer.padding or {}
        self._tokenizer.enable_padding(
            pad_id=pad.get("pad_id", 0), pad_token=pad.get("pad_token", "[PAD]")
        )
        self._inputs = manifest["inputs"]

    def count_tokens(self, texts: Sequence[str]) -> int:
        """The tokens the model reads for `texts`, padding left out."""
        return sum(sum(e.attention_mask) for e in self._tokenizer.encode_batch(list(texts)))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        columns = {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }
        feed = {k: np.asarray(columns[k], dtype=np.int64) for k in self._inputs}
        rows = self._session.run(None, feed)[0].astype(np.float32, copy=False)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return rows / norms


def calls(texts: Sequence[str], batch_size: int | None) -> list[list[int]]:
    """The texts' positions, sorted by length as encode() does (a call pads only to its own
    longest text) and cut into calls: `batch_size` texts each, or, with None, as many as fit in
    CALL_CHARS characters (at least one)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    if batch_size:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    cut: list[list[int]] = []
    size = 0
    for i in order:
        if not cut or size + len(texts[i]) > CALL_CHARS:
            cut.append([])
            size = 0
        cut[-1].append(i)
        size += len(texts[i])
    return cut


class OnnxEmbedder(Embedder):
    """A sentence-transformers model on ONNX Runtime: queries and writes on separate sessions.

    A query (one text, `query=True`) runs on the caller's thread, on the query session. Anything
    else, even a one-chunk upsert, runs on one single-threaded session from `bulk_threads` worker
    threads, one batch each (ONNX Runtime releases the GIL), `batch_nice` levels below the
    caller's priority: measured on 2 cores, two batches side by side embed 1.2-1.3x more chunks/s
    than one batch at a time on a 2-thread intra-op pool, which waits at every operator for its
    slower thread (scripts/bench_embed.py).
    """

    def __init__(
        self,
        model: str,
        build: OnnxBuild,
        runtime: str,
        source: Path,
        batch_size: int | None = None,  # None: up to CALL_CHARS characters a call
        query_threads: int = 1,
        bulk_threads: int | None = None,
        batch_nice: int = 0,
    ) -> None:
        super().__init__("sentence-transformers", model)
        self.build = build
        self.runtime = runtime
        self.source = source
        self.batch_size = batch_size
        self._query = self._session(query_threads)
        self._bulk: OnnxSession | None = None
        self._workers = batch_workers(bulk_threads or os.cpu_count() or 1, batch_nice, "onnx-bulk")
        self._lock = threading.Lock()
        self.dim = int(self._query.embed(["dimension probe"]).shape[1])

    def _session(self, threads: int) -> OnnxSession:
        model_file = self.build.model_file(self.runtime)
        tokenizer = self.build.folder / "tokenizer.json"
        return OnnxSession(model_file, tokenizer, self.build.manifest, threads)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if query and len(texts) == 1:
            return self._query.embed(texts)
        bulk = self._bulk_session()
        out = np.empty((len(texts), self.dim), dtype=np.float32)

        def run(picked: list[int]) -> None:
            out[picked] = bulk.embed([texts[i] for i in picked])

        for _ in self._workers.map(run, calls(texts, self.batch_size)):  # re-raises an error here
            pass
        return out

    @property
    def batches_queries(self) -> bool:
        return False  # compute-bound on the CPU: each question on its caller's thread, every core

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._query.embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._query.embed(texts)

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        return self._query.count_tokens(texts)

    def _bulk_session(self) -> OnnxSession:
        """Made on a worker: any thread the session starts is born at the workers' priority."""
        if self._bulk is None:
            with self._lock:
                if self._bulk is None:
                    self._bulk = self._workers.submit(self._session, 1).result()
        return self._bulk

    def dimension(self) -> int:
        return self.dim

    def placement(self) -> Placement:
        return Placement("cpu", "int8" if self.runtime == "onnx-int8" else "fp32")

    def verify(self) -> list[str]:
        """What no longer matches between the cached export and the model's files."""
        return verify_build(self.build, self.source)
