"""The watcher: watchdog events + start-up and periodic reconciles, applied by one worker thread."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable

from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from rag_api.catalog import Catalog
from rag_api.errors import MassRemoval
from rag_api.indexing.sync import sync_collection
from rag_api.watcher.events import EVENT_TYPES, FolderEvents
from rag_api.watcher.pending import Work
from rag_api.watcher.watched import CollectionState

log = logging.getLogger("rag_api.watcher")
RETRY_MAX_S = 30.0
MAX_SLEEP_S = 5.0  # the worker looks around at least this often, whatever it expects
OPTIMIZE_AFTER_CHUNKS = 1000  # a reconcile that wrote this many chunks rebuilds the search index

# watchdog re-adds inotify watches of a folder moved inside the tree and warns about it; harmless
warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning, "watchdog")


class Watcher:
    """Keeps every enabled collection of a hub in sync with its kb folder.

    Events are queued per path and applied once quiet; a full reconcile runs at start and every
    `rescan_s`. Failures (embedder or store down) back off and retry: nothing is dropped.
    """

    def __init__(
        self,
        hub: Catalog,
        *,
        debounce_s: float | None = None,
        rescan_s: float | None = None,
        max_bytes: int | None = None,
        retry_max_s: float = RETRY_MAX_S,
        clock: Callable[[], float] = time.monotonic,  # when changes are quiet (tests move it)
    ) -> None:
        settings = hub.settings
        self.clock = clock
        self.hub = hub
        self.debounce_s = settings.watch_debounce_s if debounce_s is None else debounce_s
        self.rescan_s = settings.watch_rescan_s if rescan_s is None else rescan_s
        self.max_bytes = settings.max_file_bytes if max_bytes is None else max_bytes
        self.retry_max_s = retry_max_s
        self.states = {
            name: CollectionState(collection, self.debounce_s, clock)
            for name, collection in hub.collections.items()
            if collection.cfg.enabled and collection.kb_path is not None
        }
        self._handlers: dict[str, FolderEvents] = {}
        self._watches: dict[str, tuple[ObservedWatch, int]] = {}  # name -> (watch, folder inode)
        self._observer = Observer()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rag-indexer", daemon=True)

    def start(self) -> Watcher:
        """Watch the folders, then reconcile each collection in the background."""
        self._observer.start()
        for state in self.states.values():
            self._handlers[state.name] = FolderEvents(state.root, state.pending, self.wake)
            self._ensure_watch(state)
            state.pending.request_reconcile(at_once=True)
            state.next_rescan = self.clock() + self.rescan_s
        self._thread.start()
        log.info(
            "watching %d collections (debounce %.1f s, rescan every %s)",
            len(self.states),
            self.debounce_s,
            f"{self.rescan_s:g} s" if self.rescan_s else "start only",
        )
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop watching; the sync in progress, if any, finishes first."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(timeout)

    def wake(self) -> None:
        """Look at the queues now (the worker otherwise sleeps until the next one is due)."""
        self._wake.set()

    def status(self) -> dict:
        """Plain data: settings, and per collection files, queue, last sync, last error, counters."""
        collections = {}
        for name, state in self.states.items():
            row = state.status()
            handler = self._handlers.get(name)
            row["counters"]["events"] = handler.events if handler else 0
            collections[name] = row
        return {
            "running": self._thread.is_alive(),
            "debounce_s": self.debounce_s,
            "rescan_s": self.rescan_s,
            "max_file_bytes": self.max_bytes,
            "collections": collections,
        }

    # --- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            for state in self.states.values():
                if self._stop.is_set():
                    break
                try:
                    self._tick(state)
                except Exception as exc:  # whatever happens, the worker keeps going
                    state.failed(exc, self.retry_max_s)
            self._wake.wait(self._sleep_s())
            self._wake.clear()

    def _tick(self, state: CollectionState) -> None:
        now = self.clock()
        if self.rescan_s and now >= state.next_rescan:
            state.next_rescan = now + self.rescan_s
            self._ensure_watch(state)
            state.pending.request_reconcile(at_once=True)
        if now >= state.retry_at:
            state.busy = True  # from taking the work until its outcome is recorded
            try:
                work = state.pending.take(now)
                if work:
                    self._apply(state, work)
            finally:
                state.busy = False

    def _apply(self, state: CollectionState, work: Work) -> None:
        collection = state.collection
        # armed before the folder is listed, the watch sees whatever changes after the listing; a
        # missing folder makes the sync raise KbFolderMissing: its chunks stay, the work waits
        self._ensure_watch(state)
        try:
            report = sync_collection(
                collection,
                max_bytes=self.max_bytes,
                only=None if work.full else work.paths,
                renamed=work.renames,
                skip=state.leave_for_now if work.full else state.known_bad,
            )
            if work.full and report.stats.written >= OPTIMIZE_AFTER_CHUNKS:
                collection.optimize()
        except MassRemoval as exc:  # held and reported; the next rescan looks again
            state.pending.restore(Work(work.paths, work.renames))
            state.hold(exc.message)
            return
        except Exception as exc:  # the watcher outlives any failure; the work waits for a retry
            state.pending.restore(work)
            state.failed(exc, self.retry_max_s)
            return
        state.record(report, work.full)
        if self._ensure_watch(state):
            # the folder appeared (or was replaced) while it was listed: what was written into it
            # before this watch was armed had no event, and no rescan may come, so compare it all
            state.pending.request_reconcile(at_once=True)
        if work.full:
            log.info(
                "%s: reconciled %d files (%d indexed, %d unchanged, %d removed) in %.2f s",
                state.name,
                report.files,
                report.indexed,
                report.unchanged,
                report.removed,
                report.seconds,
            )

    def _sleep_s(self) -> float:
        now = self.clock()
        deadlines = [now + MAX_SLEEP_S]
        for state in self.states.values():
            if self.rescan_s:
                deadlines.append(state.next_rescan)
            due = state.pending.next_due()
            if due is not None:
                deadlines.append(max(due, state.retry_at))
        return max(min(deadlines) - now, 0.0)

    def _ensure_watch(self, state: CollectionState) -> bool:
        """Watch the folder (again, if it was replaced); True when a new watch was armed just now
        (events from before it are lost). Not watched while missing or unwatchable (logged once)."""
        try:
            inode = state.root.stat().st_ino if state.root.is_dir() else None
        except OSError:
            inode = None
        current = self._watches.get(state.name)
        if current is not None and current[1] == inode:
            return False
        if current is not None:
            self._observer.unschedule(current[0])
            del self._watches[state.name]
        if inode is None:
            state.watching = False  # the sync that follows says why, once
            return False
        handler = self._handlers[state.name]
        try:
            watch = self._observer.schedule(
                handler, str(state.root), recursive=True, event_filter=EVENT_TYPES
            )
        except OSError as exc:  # e.g. the inotify watch limit (fs.inotify.max_user_watches)
            if state.watching is not False:
                log.warning(
                    "%s: cannot watch %s (%s); only the periodic reconcile will see changes",
                    state.name,
                    state.root,
                    exc,
                )
            state.watching = False  # the folder is there: reconciles still apply
            return False
        self._watches[state.name] = (watch, inode)
        state.watching = True
        return True
