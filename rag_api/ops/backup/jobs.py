"""Backups taken by the server in the background (POST /v1/ops/backup): one at a time, as jobs
followed by id, like upload jobs; kept in memory (the backups themselves are on disk)."""

from __future__ import annotations

import threading
import uuid
import weakref
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rag_api.catalog import Catalog
from rag_api.errors import JobNotFound, RagError
from rag_api.ops.backup.take import take_backup

Status = Literal["queued", "running", "done", "failed"]
HISTORY = 50


@dataclass
class BackupJob:
    id: str
    collections: list[str] | None
    to: str | None
    status: Status = "queued"
    created_at: str = field(default_factory=lambda: _now())
    finished_at: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, str] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class BackupJobs:
    """A hub's backup jobs; one worker runs them in order (a backup reads whole collections: two
    at once would only compete for the same disk)."""

    _of: weakref.WeakKeyDictionary[Catalog, BackupJobs] = weakref.WeakKeyDictionary()
    _of_lock = threading.Lock()

    def __init__(self, hub: Catalog) -> None:
        self._hub = weakref.ref(hub)
        self._jobs: dict[str, BackupJob] = {}
        self._lock = threading.Lock()
        self._run = threading.Lock()

    @classmethod
    def of(cls, hub: Catalog) -> BackupJobs:
        with cls._of_lock:
            jobs = cls._of.get(hub)
            if jobs is None:
                jobs = cls._of[hub] = cls(hub)
            return jobs

    def submit(self, collections: list[str] | None, to: Path | None) -> BackupJob:
        hub = self._hub()
        assert hub is not None
        for name in collections or []:
            hub.collection(name, enabled_only=False)  # an unknown name: 404 now, not a failed job
        job = BackupJob(uuid.uuid4().hex[:16], collections, None if to is None else str(to))
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > HISTORY:
                del self._jobs[next(iter(self._jobs))]
        threading.Thread(
            target=self._work, args=(job,), name=f"backup-{job.id}", daemon=True
        ).start()
        return job

    def get(self, job_id: str) -> BackupJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"no backup job '{job_id}' (only the last {HISTORY} are kept)")
        return job

    def _work(self, job: BackupJob) -> None:
        hub = self._hub()
        with self._run:
            job.status = "running"
            try:
                if hub is None:
                    raise RagError("the hub was closed before the backup ran")
                to = None if job.to is None else Path(job.to)
                job.result = take_backup(hub, job.collections, to, in_server=True).as_dict()
                job.status = "done"
            except RagError as exc:
                job.error, job.status = {"code": exc.code, "message": exc.message}, "failed"
            except Exception as exc:  # reported in the job: nobody waits on this thread
                message = f"internal error: {type(exc).__name__}: {exc}"
                job.error, job.status = {"code": "INTERNAL_ERROR", "message": message}, "failed"
            job.finished_at = _now()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
