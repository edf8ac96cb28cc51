"""Retrieval started before the caller stops talking (docs/voice-admin.md, "Prefetch").

A search or context request with `"prefetch": true` is acknowledged at once and done in the
background; the same request without it then gets that work, marked `"cached": true`. An answer is
kept for one key (a scoped key never gets another key's work), a few seconds, and only while every
collection it may have read is unchanged: a write, a migration's or a restore's switch, or a new
configuration of one of them, and the request is served fresh. At most `slots` prefetches run or
wait at once; beyond that one is refused (429), like a full upload queue.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from rag_api.access import grant
from rag_api.catalog import Catalog
from rag_api.errors import QueueFull
from rag_api.kbadmin.models import Search
from rag_api.routing import Target
from rag_api.schema import Answer

A = TypeVar("A", bound=Answer)

TTL_S = 5.0  # a turn's partial transcript comes a second or two before its end
CAPACITY = 64  # answers kept (a few KB each)
WORKERS = 2  # prefetches run at once (one per core here; the rest wait for them)
SLOTS = 8  # prefetches running or waiting at once


@dataclass(frozen=True)
class _Kept:
    work: Future
    started: float
    versions: tuple


class Prefetches:
    """The answers prefetched for the hub `hub` (owned by its `KbAdmin`)."""

    def __init__(
        self, hub: Catalog, capacity: int = CAPACITY, ttl: float = TTL_S, slots: int = SLOTS
    ) -> None:
        self.hub = hub
        self.capacity = capacity
        self.ttl = ttl
        self._kept: OrderedDict[Hashable, _Kept] = OrderedDict()
        self._lock = threading.Lock()
        self.slots = slots
        self.running = 0  # prefetches running or waiting for a worker
        self._workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="rag-prefetch")

    def start(self, route: str, request: Search, target: Target, work: Callable[[], A]) -> None:
        """Run `work` (the request's answer) in the background and keep its answer."""
        with self._lock:
            if self.running >= self.slots:
                raise QueueFull("too many prefetches at once: ask without prefetch", retry_after=1)
            self.running += 1
        versions = self._versions(target)  # before the work reads anything

        def run() -> A:
            try:
                return work()
            finally:
                self._done()

        try:
            future = self._workers.submit(contextvars.copy_context().run, run)
        except BaseException:
            self._done()
            raise
        with self._lock:
            key = self._key(route, request, target)
            self._kept[key] = _Kept(future, time.monotonic(), versions)
            self._kept.move_to_end(key)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def answer(self, route: str, request: Search, target: Target) -> A | None:
        """The prefetched answer to this request, marked cached, when it still holds; else None
        (the caller answers it fresh)."""
        if not self._kept:
            return None
        with self._lock:
            kept = self._kept.get(self._key(route, request, target))
        if kept is None or time.monotonic() - kept.started > self.ttl:
            return None
        if kept.versions != self._versions(target):
            return None
        try:
            answer = kept.work.result()
        except Exception:  # the fresh request reports its own error
            return None
        if kept.versions != self._versions(target):  # changed while the work ran
            return None
        return answer.model_copy(update={"cached": True})

    def _done(self) -> None:
        with self._lock:
            self.running -= 1

    def close(self) -> None:
        self._workers.shutdown(wait=True, cancel_futures=True)

    def _versions(self, target: Target) -> tuple:
        """What the request may read, as it is now: every collection when `auto` chooses."""
        collections = [target.collection] if target.collection else self.hub.collections.values()
        return tuple(collection.version() for collection in collections)

    @staticmethod
    def _key(route: str, request: Search, target: Target) -> Hashable:
        current = grant.current.get()
        who = current.principal.id if current else None
        where = target.collection.name if target.collection else target.candidates
        body = request.model_dump(exclude={"prefetch"}, exclude_unset=True)
        return (who, route, where, json.dumps(body, sort_keys=True, default=str))
