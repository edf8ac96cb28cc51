"""Reading kb files in worker processes: a sync of many files reads and chunks them (the format
readers and the splitter's sentence model, pure Python: one core each) and work out their text
facts (labels and BM25: text_facts) beside the process that embeds and writes them, in the order
they were listed.

A pool is used for a sync of at least POOL_MIN_FILES files to read, with RAG_READ_WORKERS
processes (default: the cores but one, none beside a model that embeds on this CPU:
sync.file_reader; 0 reads every file in the syncing thread). It is started once per process, at
its first such sync, forked from a forkserver that imported the readers, and kept for the syncs
after. Until its workers have loaded the splitter, the syncing thread reads the files itself, so a
pool's start costs a sync nothing. Files OCR may read stay in the syncing thread (their page
progress; Tesseract is a process of its own already). A pool that breaks (a worker killed) is
dropped and the rest is read in the syncing thread; the next big sync starts a new one. Files go
to the workers BATCH at a time, at most AHEAD tasks a worker ahead of the writing, so memory
stays flat.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TypeVar

from rag_api.config import ChunkingConfig
from rag_api.indexing.chunking import (
    OCR_KINDS,
    SUFFIXES,
    ReadResult,
    UnreadableFile,
    read_chunks,
    split_text,
)
from rag_api.indexing.kb import KbFile
from rag_api.indexing.text_facts import text_facts

log = logging.getLogger("rag_api.indexing.read_pool")
POOL_MIN_FILES = 200  # fewer files are read in the syncing thread: a pool would not pay its start
BATCH = 16  # files a worker reads in one task (a task's hand-over costs the syncing process)
AHEAD = 4  # tasks submitted ahead of the files being written, per worker
T = TypeVar("T")
Read = ReadResult | UnreadableFile  # a file's chunks, or why it could not be read
ReadHere = Callable[[KbFile], ReadResult]  # the syncing thread's own reading (OCR progress too)


def default_workers() -> int:
    """The cores but one: the syncing process keeps one for labelling and writing."""
    return max(0, min(len(os.sched_getaffinity(0)) - 1, 8))


class _Pool:
    """The process's reading workers, ready once each has loaded the splitter."""

    def __init__(self, workers: int, nice: int) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        self.workers = workers
        self.executor = ProcessPoolExecutor(workers, context, initializer=os.nice, initargs=(nice,))
        self.ready = [self.executor.submit(_warm) for _ in range(workers)]

    def is_ready(self) -> bool:
        return all(f.done() for f in self.ready)

    def wait_ready(self, timeout_s: float) -> bool:
        return not wait(self.ready, timeout_s).not_done

    def pids(self) -> list[int]:
        return list(getattr(self.executor, "_processes", None) or {})

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


_lock = threading.Lock()
_pool: _Pool | None = None


def _shared_pool(workers: int, nice: int) -> _Pool:
    global _pool
    with _lock:
        if _pool is None or _pool.workers != workers:
            if _pool is not None:
                _pool.close()
            _pool = _Pool(workers, nice)
        return _pool


def _dropped(broken: _Pool) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.close()


def worker_pids() -> list[int]:
    """The reading workers' process ids (none before the first big sync, or after a break)."""
    with _lock:
        return _pool.pids() if _pool is not None else []


@atexit.register
def _close() -> None:
    if _pool is not None:
        _pool.close()


def _warm() -> None:
    """The splitter's sentence model loaded (seconds, once a worker): a text it must cut."""
    split_text("# Warm up\n\n" + "The splitter loads its sentence model. " * 100, ChunkingConfig())


def _read_all(files: list[tuple[Path, str]], chunking: ChunkingConfig, language: str) -> list[Read]:
    """A worker's task: several files, each one's chunks and their text facts, or why it could
    not be read."""
    out: list[Read] = []
    for path, rel in files:
        try:
            result = read_chunks(path, rel, chunking)
        except UnreadableFile as exc:
            out.append(exc)
            continue
        result.facts = text_facts(result.chunks, language, chunking.size)
        out.append(result)
    return out


def _in_process(file: KbFile) -> bool:
    return SUFFIXES.get(file.path.suffix.lower()) in OCR_KINDS


class FileReader:
    """Reads the files of one sync in order: in the pool when they are many, else here."""

    def __init__(
        self,
        chunking: ChunkingConfig,
        language: str,
        read_here: ReadHere,
        workers: int,
        nice: int,
        files: int,
    ) -> None:
        self.chunking = chunking
        self.language = language  # the collection's: labels and BM25 are worked out in it
        self.read_here = read_here
        use_pool = workers > 0 and files >= POOL_MIN_FILES
        self.pool = _shared_pool(workers, nice) if use_pool else None
        self.in_workers = 0  # files the workers read

    def read(self, items: Iterable[tuple[KbFile, T]]) -> Iterator[tuple[KbFile, T, Read]]:
        """Each item with its file's chunks (or why it could not be read), in the items' order."""
        pending: deque[tuple[list[tuple[KbFile, T]], Future[list[Read]] | None]] = deque()
        source = iter(items)
        while True:
            ahead = AHEAD * self.pool.workers if self.pool is not None else 1
            while len(pending) < ahead and (batch := list(itertools.islice(source, BATCH))):
                pending.append((batch, self._submit([file for file, _ in batch])))
            if not pending:
                return
            batch, future = pending.popleft()
            results = iter(self._results(future))
            for file, extra in batch:
                if future is None or _in_process(file):
                    yield file, extra, self._read_here(file)
                else:
                    result = next(results, None)  # none: the pool broke
                    yield file, extra, result if result is not None else self._read_here(file)

    def _submit(self, files: list[KbFile]) -> Future[list[Read]] | None:
        pool = self.pool
        if pool is None or not pool.is_ready():
            return None
        todo = [(file.path, file.rel) for file in files if not _in_process(file)]
        try:
            return pool.executor.submit(_read_all, todo, self.chunking, self.language)
        except (BrokenProcessPool, RuntimeError):  # broken, or shut down meanwhile
            self._drop(pool)
            return None

    def _results(self, future: Future[list[Read]] | None) -> list[Read]:
        """What a task read; none when the pool broke (its files are read here)."""
        if future is None:
            return []
        try:
            error = future.exception()
        except BaseException:  # cancelled: the pool was shut down meanwhile
            error = BrokenProcessPool()
        if isinstance(error, BrokenProcessPool):
            if self.pool is not None:
                self._drop(self.pool)
            return []
        if error is not None:
            raise error
        results = future.result()
        self.in_workers += len(results)
        return results

    def _read_here(self, file: KbFile) -> Read:
        try:
            return self.read_here(file)
        except UnreadableFile as exc:
            return exc

    def _drop(self, pool: _Pool) -> None:
        log.warning("a reading worker stopped: the rest of the sync is read in process")
        self.pool = None
        _dropped(pool)
