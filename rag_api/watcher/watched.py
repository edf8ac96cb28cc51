"""What the watcher knows of one collection: its queue, health, bad files and counters."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rag_api.errors import RagError
from rag_api.indexing import kb
from rag_api.indexing.sync import SyncReport
from rag_api.points.collection import Collection
from rag_api.watcher.pending import Pending

log = logging.getLogger("rag_api.watcher")
RETRY_FIRST_S = 0.5
QUIET_SKIPS = kb.QUIET_SKIPS

COUNTERS = (
    "syncs",
    "reconciles",
    "files_indexed",
    "files_removed",
    "chunks_embedded",
    "chunks_reused",
    "chunks_deleted",
    "errors",
)


class CollectionState:
    """One watched collection. The worker thread writes it; status() may be read from any thread."""

    def __init__(
        self, collection: Collection, quiet_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        assert collection.kb_path is not None
        self.collection = collection
        self.root: Path = collection.kb_path
        self.quiet_s = quiet_s
        self.pending = Pending(self.root, quiet_s, clock)
        self.watching: bool | None = None  # None: not looked at yet
        self.busy = False  # a sync is running
        self.next_rescan = 0.0
        self.retry_at = 0.0
        self.failures = 0
        self.counters: Counter[str] = Counter(dict.fromkeys(COUNTERS, 0))
        self._files: set[str] = set()
        self._bad: dict[str, tuple[kb.Signature, str]] = {}  # reported once, until the file changes
        self._skips: dict[str, str] = {}  # logged skip reasons (size limit, not a regular file)
        self._last_sync: datetime | None = None
        self._last_reconcile: datetime | None = None
        self._last_error: tuple[datetime, str] | None = None
        self._held: str | None = None  # a mass removal found by a reconcile, not applied
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.collection.name

    # --- hooks for sync_collection ---------------------------------------------------------

    def known_bad(self, item: kb.KbFile) -> bool:
        """Skip a file that failed before and has not changed since (it was logged already)."""
        with self._lock:
            bad = self._bad.get(item.rel)
        return bad is not None and bad[0] == kb.signature(item.path)

    def leave_for_now(self, item: kb.KbFile) -> bool:
        """During a full reconcile: skip known-bad files and files still in the queue; a file
        written moments ago without an event goes to the queue instead of being read half-way."""
        if self.pending.waiting(item.rel):
            return True
        age_s = (time.time_ns() - item.mtime_ns) / 1e9
        if 0 <= age_s < self.quiet_s:
            self.pending.touch(item.rel)
            return True
        return self.known_bad(item)

    # --- outcomes ---------------------------------------------------------------------------

    def record(self, report: SyncReport, full: bool) -> None:
        """Take in a finished sync: known files, bad files (logged once), counters."""
        vanished = [rel for rel in report.errors if kb.signature(self.root / rel) is None]
        for rel in vanished:
            self.pending.touch(rel)  # deleted while being read: its chunks go next round
        now = datetime.now(UTC)
        with self._lock:
            if self.failures:
                log.info("%s: indexing works again; the queue drains", self.name)
            self.failures = 0
            self.retry_at = 0.0
            for rel, reason in report.errors.items():
                signature = kb.signature(self.root / rel)
                if signature is not None:
                    self._bad[rel] = (signature, reason)
            for rel in report.current | report.gone:
                self._bad.pop(rel, None)
                self._skips.pop(rel, None)
            self._bad = {rel: bad for rel, bad in self._bad.items() if (self.root / rel).exists()}
            if full:
                self._held = None
                self._files = set(report.current)
                self._skips = {r: why for r, why in self._skips.items() if r in report.skipped}
                self._last_reconcile = now
            else:
                self._files = (self._files | report.current) - report.gone
            new_skips = {
                rel: why
                for rel, why in report.skipped.items()
                if why not in QUIET_SKIPS and self._skips.get(rel) != why
            }
            self._skips.update(new_skips)
            self._last_sync = now
            self.counters.update(
                syncs=1,
                reconciles=int(full),
                files_indexed=report.indexed,
                files_removed=report.removed,
                chunks_embedded=report.stats.embedded,
                chunks_reused=report.stats.reused,
                chunks_deleted=report.stats.deleted,
            )
        for rel, why in sorted(new_skips.items()):
            log.warning("%s: skipped %s: %s", self.name, rel, why)

    def hold(self, message: str) -> None:
        """A reconcile found a mass removal: report it (logged once) instead of applying it."""
        with self._lock:
            repeated, self._held = self._held == message, message
        if not repeated:
            log.warning("%s: mass removal held: %s", self.name, message)

    def failed(self, exc: Exception, retry_max_s: float) -> float:
        """A sync failed (embedder or store down, ...): back off; returns the delay in seconds."""
        message = exc.message if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
        with self._lock:
            self.failures += 1
            delay = min(RETRY_FIRST_S * 2 ** (self.failures - 1), retry_max_s)
            self.retry_at = time.monotonic() + delay
            repeated = self.failures > 1 and self._last_error and self._last_error[1] == message
            self._last_error = (datetime.now(UTC), message)
            self.counters.update(errors=1)
        if repeated:
            log.debug("%s: still failing, retry in %.1f s: %s", self.name, delay, message)
        elif isinstance(exc, RagError):
            log.warning("%s: indexing paused, retry in %.1f s: %s", self.name, delay, message)
        else:
            log.exception("%s: indexing failed, retry in %.1f s", self.name, delay)
        return delay

    def status(self) -> dict:
        """Plain-data view for the status route and metrics."""
        with self._lock:
            error = self._last_error
            retry_in = max(self.retry_at - time.monotonic(), 0.0) if self.failures else None
            return {
                "kb": str(self.root),
                "kb_folder": kb.folder_problem(self.root),  # None: the folder can be listed
                "watching": self.watching,
                "held": self._held,
                "files": len(self._files),
                "queue": len(self.pending),
                "reconcile_queued": self.pending.reconcile_queued,
                "busy": self.busy,
                "last_sync": _iso(self._last_sync),
                "last_reconcile": _iso(self._last_reconcile),
                "last_error": {"at": _iso(error[0]), "message": error[1]} if error else None,
                "retry_in_s": None if retry_in is None else round(retry_in, 1),
                "bad_files": {rel: reason for rel, (_, reason) in sorted(self._bad.items())},
                "skipped_files": dict(sorted(self._skips.items())),
                "counters": dict(self.counters),
            }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None
