"""The hop of a hot read to a worker thread and back to the event loop, with as little between as
can be (docs/architecture.md, "The hot reads")."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

Job = tuple[asyncio.AbstractEventLoop, asyncio.Future, contextvars.Context, Callable, tuple]


class ReadThreads:
    """Up to `most` daemon threads, started when needed; a call beyond that many waits its turn."""

    def __init__(self, most: int, name: str) -> None:
        self.most = most
        self.name = name
        self.lock = threading.Lock()
        self.idle: list[SimpleQueue[Job]] = []  # the inboxes of idle threads, last idle on top
        self.waiting: deque[Job] = deque()  # calls no thread was free for
        self.started = 0

    def run(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """`fn(*args)` in a worker thread, in a copy of the caller's context (its request id);
        await the result on the caller's loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        job = (loop, future, contextvars.copy_context(), fn, args)
        with self.lock:
            if self.idle:
                inbox = self.idle.pop()
            elif self.started < self.most:
                self.started += 1
                inbox = SimpleQueue()
                name = f"{self.name}-{self.started}"
                threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
            else:
                self.waiting.append(job)
                return future
        inbox.put(job)
        return future

    def _serve(self, inbox: SimpleQueue[Job]) -> None:
        job = inbox.get()
        while True:
            _run(job)
            with self.lock:
                if self.waiting:
                    job = self.waiting.popleft()
                    continue
                self.idle.append(inbox)
            job = inbox.get()


def _run(job: Job) -> None:
    loop, future, context, fn, args = job
    try:
        result = context.run(fn, *args)
    except BaseException as exc:  # the request sees it, as it would a call it made itself
        _hand_back(loop, _fail, future, exc)
    else:
        _hand_back(loop, _succeed, future, result)


def _hand_back(loop: asyncio.AbstractEventLoop, settle: Callable, future, value) -> None:
    try:
        loop.call_soon_threadsafe(settle, future, value)
    except RuntimeError:  # the loop closed meanwhile: nobody waits for this answer any more
        pass


def _succeed(future: asyncio.Future, result: Any) -> None:
    if not future.done():  # a request cancelled meanwhile (its client gone, a shutdown)
        future.set_result(result)


def _fail(future: asyncio.Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
