"""A lane: jobs run one after another, in the order they came, by one worker thread (started when
a job is submitted, ending when none waits). A bounded lane refuses a job beyond its capacity
with 429 and a Retry-After estimated from its recent job times, before the caller does anything
(`slot`)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rag_api.errors import QueueFull, RagError
from rag_api.jobs.job import Job

log = logging.getLogger("rag_api.jobs")
RETRY_AFTER_DEFAULT_S = 5
RETRY_AFTER_MAX_S = 300
Report = Callable[..., None]  # (phase, done, total, **detail): Jobs.report
Work = Callable[[Report], Any]  # a job's work: its answer, or it raises


class Stopped(Exception):
    """Raised by a job's work when its lane stops (the server shuts down) before it finished: the
    job goes back to `queued`, for whoever starts the lane again (a kept job: the next start)."""


class Lane:
    """`run` is how each job is run (Jobs.run); `capacity`: jobs that may wait besides the one
    running (None: no bound)."""

    def __init__(
        self, name: str, run: Callable[[Job, Work], Any], capacity: int | None = None
    ) -> None:
        self.name = name
        self.capacity = capacity
        self.stopping = threading.Event()  # a job's work checks it between its steps
        self._run = run
        self._waiting: deque[tuple[Job, Work]] = deque()
        self._reserved = 0
        self._durations: deque[float] = deque(maxlen=20)
        self._worker: threading.Thread | None = None
        self._cond = threading.Condition()

    @contextmanager
    def slot(self, refusal: str) -> Iterator[None]:
        """Hold a place in the lane while the caller prepares its job (QueueFull with `refusal`
        when none is left); `submit` the job inside the block, or the place is given back."""
        with self._cond:
            full = (
                self.capacity is not None and len(self._waiting) + self._reserved >= self.capacity
            )
            if full:
                raise QueueFull(refusal, self.retry_after())
            self._reserved += 1
        try:
            yield
        finally:
            with self._cond:
                self._reserved -= 1

    def submit(self, job: Job, work: Work) -> None:
        """Queue the job; its work runs once the jobs before it have. A stopped lane leaves it
        queued, for whoever resumes the lane to submit again."""
        with self._cond:
            if self.stopping.is_set():
                return
            self._waiting.append((job, work))
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._drain, name=f"rag-{self.name}", daemon=True
                )
                self._worker.start()

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the recent mean job time times the jobs ahead."""
        if not self._durations:
            return RETRY_AFTER_DEFAULT_S
        mean = sum(self._durations) / len(self._durations)
        return max(1, min(RETRY_AFTER_MAX_S, math.ceil(mean * max(len(self._waiting), 1))))

    def stop(self, timeout: float = 60.0) -> None:
        """Stop after the step the running job is at; the jobs still waiting are let go (queued,
        as they were): `resume` and submit them again to run them."""
        with self._cond:
            self.stopping.set()
            worker = self._worker
            self._waiting.clear()
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)

    def resume(self) -> None:
        with self._cond:
            self.stopping.clear()

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._waiting or self.stopping.is_set():
                    self._worker = None
                    return
                job, work = self._waiting.popleft()
            started = time.monotonic()
            try:
                self._run(job, work)
            except Stopped:
                pass
            except RagError as exc:  # the job says it; nobody waits on this thread
                log.warning("%s job %s failed: %s", job.kind, job.id, exc.message)
            except Exception:  # the worker outlives any failure; the job says what happened
                log.exception("%s job %s failed", job.kind, job.id)
            self._durations.append(time.monotonic() - started)
