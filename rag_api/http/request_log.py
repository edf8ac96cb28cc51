"""Per request: an id (X-Request-ID, echoed), one log line, and the HTTP metrics. Pure ASGI.

The metrics are counted on the spot (a scrape right after a request sees it). The log line is
written a moment later by a thread of its own: made and written at once on the event loop it took
~0.3 ms of CPU right when the client woke to read its answer (on 2 cores, often the core it woke
on), which added ~0.2 ms to what a reader waited (scripts/bench_http.py); that thread is handed
the lines by a timer, not woken per request (_Lines). A line carries the time its request ended;
lines keep their order, and the ones not yet written when the server stops (its lifespan's
shutdown) or the process exits are written then.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import time
from collections.abc import Iterable
from queue import Empty, SimpleQueue
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_api.http.error_responses import crash_response
from rag_api.observability.metrics import HTTP_LATENCY, HTTP_REQUESTS
from rag_api.observability.request_context import RequestContext, current, request_id_from

log = logging.getLogger("rag_api.access")
UNMATCHED = "<unmatched>"  # a path no route serves: one label, not one per path
LINE_DELAY_S = 0.002  # a request's line waits at most this long after its answer left


class RequestLog:
    """Outermost middleware: sets the request context, then logs and counts the finished request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, _flushing(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"")
        request = Tracked(header)
        status = 500  # what the server answers when the app fails before a response
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
                message = {**message, "headers": request.headers(message.get("headers", []))}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:  # an answer already began: the server ends the connection
                raise
            # a bug: answered here, inside the request's context (its id in the body and log)
            await crash_response(scope, exc)(scope, receive, send_with_id)
        finally:
            request.done(scope, status)


class Tracked:
    """One request from its start (now, or `started`): its context set (an id: the client's
    X-Request-ID `header` when it is a sane one) until done() counts and logs it. What RequestLog
    does for every request, and rag_api.http.hot_reads for the ones it answers itself."""

    __slots__ = ("context", "token", "started")

    def __init__(self, header: bytes, started: float | None = None) -> None:
        self.context = RequestContext(request_id_from(header.decode("latin-1")))
        self.token = current.set(self.context)
        self.started = time.perf_counter() if started is None else started

    def headers(self, headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """An answer's headers, with the request's id."""
        return [*headers, (b"x-request-id", self.context.request_id.encode())]

    def done(self, scope: Scope, status: int) -> None:
        """The request answered `status` (500 when it failed before an answer began)."""
        current.reset(self.token)
        _record(scope, status, time.perf_counter() - self.started, self.context)


def _record(scope: Scope, status: int, elapsed: float, context: RequestContext) -> None:
    """Count the finished request and log its line."""
    route = getattr(scope.get("route"), "path", UNMATCHED)
    HTTP_REQUESTS.labels(route, scope["method"], f"{status // 100}xx").inc()
    HTTP_LATENCY.labels(route, context.collection).observe(elapsed)
    if log.isEnabledFor(logging.INFO):
        LINES.put((scope["method"], scope["path"], route, status, elapsed, context, time.time()))


def _flushing(send: Send) -> Send:
    """The lifespan's `send`: the pending lines are written before the server hears it stopped."""

    async def send_after_lines(message: Message) -> None:
        if message["type"].startswith("lifespan.shutdown"):
            LINES.flush()
        await send(message)

    return send_after_lines


def _line(fields: tuple[Any, ...]) -> None:
    """Make and handle one request's log line."""
    method, path, route, status, elapsed, context, ended = fields
    # The record made directly, not by log.info(): that walks the stack to find the calling line
    # (a third of the line's cost), which no log format here shows; this is the caller anyway.
    args = (
        method,
        path,
        status,
        elapsed * 1000,
        f" collection={context.collection}" if context.collection else "",
    )
    record = log.makeRecord(
        log.name,
        logging.INFO,
        __file__,
        0,
        "%s %s %d %.1f ms%s",
        args,
        None,
        "_record",
        extra={
            "method": method,
            "route": route,
            "path": path,
            "status": status,
            "latency_ms": round(elapsed * 1000, 3),
            "collection": context.collection or None,
            "request_id": context.request_id,
        },
    )
    record.created, record.msecs = ended, int((ended - int(ended)) * 1000) + 0.0  # when it ended
    log.handle(record)


class _Lines:
    """The lines of finished requests, written in order by one daemon thread (started with the
    first line) at most LINE_DELAY_S after their request ended; flush() writes the rest at once.

    A line is handed to that thread by a timer of the event loop that served it, LINE_DELAY_S
    later, with the lines that ended meanwhile: woken on the spot, the thread took a core right
    when the client woke to read its answer, which cost a reader ~0.1 ms (scripts/bench_http.py).
    """

    def __init__(self) -> None:
        self.queue: SimpleQueue[list[tuple[Any, ...]]] = SimpleQueue()
        self.lock = threading.Lock()  # held while lines are written: flush() waits for it
        self.thread: threading.Thread | None = None
        self.held: list[tuple[Any, ...]] = []  # lines not handed to the thread yet
        self.held_lock = threading.Lock()
        self.timer: asyncio.AbstractEventLoop | None = None  # the loop whose timer hands them

    def put(self, fields: tuple[Any, ...]) -> None:
        if self.thread is None:
            with self.lock:
                if self.thread is None:
                    atexit.register(self.flush)
                    self.thread = threading.Thread(target=self._run, name="rag-log", daemon=True)
                    self.thread.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: handed over at once
            loop = None
        with self.held_lock:
            self.held.append(fields)
            if loop is not None and (self.timer is None or not self.timer.is_running()):
                self.timer = loop  # (a loop that stopped before its timer fired is replaced)
                loop.call_later(LINE_DELAY_S, self._hand_over)
        if loop is None:
            self._hand_over()

    def _hand_over(self) -> None:
        with self.held_lock:
            held, self.held, self.timer = self.held, [], None
        if held:
            self.queue.put(held)

    def _run(self) -> None:
        while True:
            lines = self.queue.get()
            with self.lock:
                for fields in lines:
                    self._write(fields)

    def flush(self) -> None:
        self._hand_over()
        with self.lock:
            while True:
                try:
                    lines = self.queue.get_nowait()
                except Empty:
                    return
                for fields in lines:
                    self._write(fields)

    def _write(self, fields: tuple[Any, ...]) -> None:
        try:
            _line(fields)
        except Exception:  # a failing handler must not stop the lines after it
            logging.getLogger(__name__).exception("could not write a request's log line")


LINES = _Lines()
