"""The hub's sources (`hub.sources`): each configured source's sync as a job of the hub's (kind
`sync`, in a lane of its own: one sync of a source at a time), started on demand (`rag-hub sync`,
POST /v1/collections/{c}/sources/{s}/sync) or by its schedule (`every`) on the writer; and what
GET /v1/collections/{c}/sources says of each."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from rag_api.catalog import Catalog
from rag_api.config.sources import SourceConfig
from rag_api.errors import SourceNotFound
from rag_api.jobs.job import Job
from rag_api.jobs.lane import Lane, Report, Work
from rag_api.points.collection import Collection
from rag_api.providers import SOURCES
from rag_api.sources.base import Source, SourceContext
from rag_api.sources.state import SourceState, SourceStates
from rag_api.sources.sync import SourceReport, scope, sync_source

log = logging.getLogger("rag_api.sources")
OPTIMIZE_AFTER_CHUNKS = 1000  # a sync that wrote this many chunks rebuilds the search index
REPORT_EVERY_S = 0.25  # a running sync's progress in its job, at most this often
TICK_S = 5.0  # the schedule looks around at least this often


class Sources:
    """Every method may be called from any thread; `start()` runs the schedule (the writer)."""

    def __init__(self, hub: Catalog, states: SourceStates) -> None:
        self.hub = hub
        self.states = states
        self._last_at: dict[tuple[str, str], float] = {}  # when each source's last sync ended
        self._asking = threading.Lock()  # one sync queued a source, however many ask at once
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- what is configured --------------------------------------------------------------------

    def block(self, collection: str, name: str) -> SourceConfig:
        """The source's block; SourceNotFound naming the collection's sources."""
        cfg = self.hub.collection(collection).cfg
        for block in cfg.sources:
            if block.name == name:
                return block
        names = ", ".join(b.name for b in cfg.sources) or "none"
        raise SourceNotFound(
            f"collection '{collection}' has no source '{name}' (its sources: {names})"
        )

    def status(self, collection: str) -> dict[str, Any]:
        """Each source of the collection: its block's essentials, what the collection holds of
        it, its last sync, when the next is due and the job running or waiting, if any."""
        coll = self.hub.collection(collection)
        rows = []
        for block in coll.cfg.sources:
            record = self.states.load(coll.name, block.name)
            held = coll.sources(scope(block.name))
            due = self._due(coll.name, block, record.last_at)
            rows.append(
                {
                    "name": block.name,
                    "kind": block.kind,
                    "every_s": block.every,
                    "documents": len(held),
                    "chunks": sum(held.values()),
                    "last": record.last,
                    "last_ok_at": _iso(record.last_ok_at),
                    "failures": record.failures,
                    "next_at": _iso(due),
                    "job": self._unfinished(coll.name, block.name),
                }
            )
        return {"collection": coll.name, "sources": rows}

    # --- syncs as jobs -------------------------------------------------------------------------

    def start_sync(
        self,
        collection: str,
        name: str,
        *,
        prune: bool = False,
        force: bool = False,
        by: str = "request",
    ) -> dict[str, Any]:
        """Queue a sync of the source (a sync that waits already is the one answered): its job."""
        coll = self.hub.collection(collection)
        block = self.block(coll.name, name)
        with self._asking:
            waiting = self._unfinished(coll.name, name, queued_only=True)
            if waiting is not None:
                return self.hub.jobs.get(waiting)
            job = self._job(coll, block, prune, force, by)
            lane = self.hub.jobs.lane(_lane(coll.name, name))
            lane.submit(job, self._work(coll, block, prune, force, lane.stopping))
        return self.hub.jobs.get(job.id)

    def run(
        self,
        collection: str,
        name: str,
        *,
        prune: bool = False,
        force: bool = False,
        also: Report | None = None,
    ) -> SourceReport:
        """Sync the source here and now (the CLI on its own store), as a job of this hub's;
        `also` hears its progress as the job does (a progress bar)."""
        coll = self.hub.collection(collection)
        block = self.block(coll.name, name)
        job = self._job(coll, block, prune, force, "command")
        return self.hub.jobs.run(job, self._work(coll, block, prune, force, None, also))

    def _job(self, coll: Collection, block: SourceConfig, prune: bool, force: bool, by: str) -> Job:
        asked = {"source": block.name, "kind": block.kind, "prune": prune, "force": force, "by": by}
        return self.hub.jobs.create("sync", [coll.name], request=asked)

    def _work(
        self,
        coll: Collection,
        block: SourceConfig,
        prune: bool,
        force: bool,
        stopping: threading.Event | None,
        also: Report | None = None,
    ) -> Work:
        def work(report: Report) -> SourceReport:
            record = self.states.load(coll.name, block.name).for_block(block)
            context = SourceContext(
                collection=coll.name,
                folder=self.hub.settings.data_dir / "sources" / coll.name / block.name,
                max_bytes=self.hub.settings.max_file_bytes,
                state=record.state,
            )
            if stopping is not None:
                context.stopping = stopping
            reported = _Reporter(report, also)
            try:
                source = build(block, context)
                result = sync_source(coll, source, prune=prune, force=force, progress=reported)
            except Exception as exc:
                self._ended(coll.name, block, None, exc)
                raise
            self._ended(coll.name, block, result, None, record)
            if result.stats.written >= OPTIMIZE_AFTER_CHUNKS:
                coll.optimize()
            return result

        return work

    def _ended(
        self,
        collection: str,
        block: SourceConfig,
        result: SourceReport | None,
        error: Exception | None,
        record: SourceState | None = None,
    ) -> None:
        """Keep how the sync went: after a scan that ended, with the source's own state; after a
        failure, with the state it had before (a half-walked site's state is not kept)."""
        now = time.time()
        if record is None:
            record = self.states.load(collection, block.name).for_block(block)
        record.last_at = now
        if error is None and result is not None:
            record.failures, record.last_ok_at = 0, now
            record.last = {"at": _iso(now), "status": "done", **result.as_dict()}
        else:
            record.failures += 1
            message = getattr(error, "message", None) or str(error)
            code = getattr(error, "code", "INTERNAL_ERROR")
            record.last = {
                "at": _iso(now),
                "status": "failed",
                "error": {"code": code, "message": message},
            }
            log.warning(
                "%s: source %s failed (%d in a row): %s; its chunks are kept",
                collection,
                block.name,
                record.failures,
                message,
            )
        self._last_at[(collection, block.name)] = now
        self.states.save(collection, block.name, record)

    def _unfinished(self, collection: str, name: str, queued_only: bool = False) -> str | None:
        """The id of the source's sync job that waits (or runs), if any."""
        for job in self.hub.jobs.unfinished("sync"):
            mine = job.collections == [collection] and (job.request or {}).get("source") == name
            if mine and (job.status == "queued" or not queued_only):
                return job.id
        return None

    # --- the schedule --------------------------------------------------------------------------

    def start(self) -> Sources:
        """Sync each source whose `every` has passed since its last sync, now and as time goes."""
        self._stop.clear()
        for lane in self._lanes():
            lane.resume()
        if self._thread is None and self._scheduled():
            self._thread = threading.Thread(target=self._run, name="rag-sources", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the schedule and every sync (each after the document it is at; the ones waiting
        are let go)."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        for lane in self._lanes():
            lane.stop(timeout)

    def _lanes(self) -> list[Lane]:
        return [
            self.hub.jobs.lane(_lane(name, block.name))
            for name, coll in self.hub.collections.items()
            for block in coll.cfg.sources
        ]

    def _scheduled(self) -> list[tuple[str, SourceConfig]]:
        return [
            (name, block)
            for name, coll in self.hub.collections.items()
            if coll.cfg.enabled
            for block in coll.cfg.sources
            if block.every
        ]

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            soonest = now + TICK_S
            for collection, block in self._scheduled():
                try:
                    due = self._due(collection, block)
                    if (
                        due is not None
                        and due <= now
                        and self._unfinished(collection, block.name) is None
                    ):
                        self.start_sync(collection, block.name, by="schedule")
                    elif due is not None:
                        soonest = min(soonest, due)
                except Exception as exc:  # the schedule outlives any one source's trouble
                    log.warning("%s: source %s not scheduled: %s", collection, block.name, exc)
            self._wake.wait(max(0.05, soonest - time.time()))
            self._wake.clear()

    def _due(
        self, collection: str, block: SourceConfig, last_at: float | None = None
    ) -> float | None:
        """When the source's next scheduled sync is due (None: only on demand)."""
        if not block.every:
            return None
        key = (collection, block.name)
        if key not in self._last_at:
            if last_at is None:
                last_at = self.states.load(collection, block.name).last_at
            self._last_at[key] = last_at or 0.0
        return self._last_at[key] + block.every


def build(block: SourceConfig, context: SourceContext) -> Source:
    """The source the block describes (its kind's, built in or a plugin's)."""
    return SOURCES.get(block.kind).factory(block, context)


class _Reporter:
    """A sync's progress into its job and to `also` (at most every REPORT_EVERY_S, and when it
    ends)."""

    def __init__(self, report: Report, also: Report | None) -> None:
        self.reports = [report] + ([also] if also is not None else [])
        self.started = time.monotonic()
        self.last = 0.0

    def __call__(self, current: SourceReport) -> None:
        now = time.monotonic()
        if now - self.last < REPORT_EVERY_S and not current.seconds:
            return
        self.last = now
        total = current.expected or 0
        done = current.listed + len(current.skipped)
        eta = None
        if total and done:
            eta = round((now - self.started) / done * max(total - done, 0), 1)
        for report in self.reports:
            report(
                "documents",
                done,
                total,
                listed=current.listed,
                indexed=current.indexed,
                unchanged=current.unchanged,
                failed=len(current.failed),
                removed=len(current.removed),
                bytes=current.bytes,
                eta_s=eta,
                **current.throughput.as_dict(),
            )


def _lane(collection: str, name: str) -> str:
    return f"sync:{collection}/{name}"


def _iso(epoch: float | None) -> str | None:
    if not epoch:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
