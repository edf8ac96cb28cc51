"""Upload jobs: what was written, and how far its indexing got; kept in RAG_DATA_DIR/jobs.

Each job is one small JSON file, written atomically when the job is created and when it finishes
(its progress in between lives in memory: a restart runs an unfinished job whole again, so
nothing in between needs to survive). A job outlives a restart: one cut short is queued again when
the hub starts, and its files are indexed then (re-indexing an unchanged file embeds nothing).
Only the newest `history` jobs are kept; an older id answers 404 saying so.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rag_api.atomic import write_atomically
from rag_api.errors import JobNotFound

log = logging.getLogger("rag_api.uploads")
Status = Literal["queued", "indexing", "done", "failed"]
FINISHED = ("done", "failed")


@dataclass
class JobFile:
    path: str  # relative to the kb folder, POSIX
    size: int
    status: Status = "queued"
    chunks: int | None = None  # the file's chunks once indexed
    embedded: int = 0  # chunks whose vectors were computed for this job
    skipped: int = 0  # chunks not embedded: their text was stored already (vector reused)
    error: str | None = None
    progress: str | None = None  # while indexing, where a long read has got ("OCR page 3/12")


@dataclass
class Job:
    id: str
    collection: str
    files: list[JobFile]
    status: Status = "queued"
    created_at: str = field(default_factory=lambda: _now())
    finished_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        files = [JobFile(**item) for item in data["files"]]
        return cls(**{**data, "files": files})


class JobBook:
    """The jobs of this data folder, newest last; every method may be called from any thread."""

    def __init__(self, folder: Path, history: int) -> None:
        self.folder = folder
        self.history = history
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._load()

    def create(self, collection: str, files: list[tuple[str, int]]) -> Job:
        job = Job(uuid.uuid4().hex, collection, [JobFile(rel, size) for rel, size in files])
        with self._lock:
            self._jobs[job.id] = job
            self._save(job)
            self._trim()
        return job

    def get(self, job_id: str) -> dict[str, Any]:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                return job.as_dict()
        raise self.missing(job_id)

    def missing(self, job_id: str) -> JobNotFound:
        return JobNotFound(
            f"no job '{job_id}': only the last {self.history} upload jobs are kept "
            "(RAG_UPLOAD_HISTORY); the files of older ones are in the kb folder, and "
            "GET /v1/collections/{collection}/files shows their index state"
        )

    def recent(self) -> list[dict[str, Any]]:
        """Every kept job, the most recent first."""
        with self._lock:
            return [job.as_dict() for job in reversed(self._jobs.values())]

    def unfinished(self) -> list[Job]:
        """Jobs a restart cut short, in the order they were created."""
        with self._lock:
            return [job for job in self._jobs.values() if job.status not in FINISHED]

    def start(self, job: Job) -> None:
        with self._lock:
            job.status = "indexing"
            for item in job.files:
                item.status, item.error = "queued", None

    def file_started(self, job: Job, item: JobFile) -> None:
        with self._lock:
            item.status = "indexing"

    def file_progress(self, item: JobFile, progress: str) -> None:
        with self._lock:
            item.progress = progress

    def file_finished(self, job: Job, item: JobFile, **outcome: Any) -> None:
        with self._lock:
            for key, value in outcome.items():
                setattr(item, key, value)
            item.status = "failed" if item.error else "done"
            item.progress = None

    def finish(self, job: Job) -> None:
        """A job is done when every file was indexed, failed when any was not (the files say why)."""
        with self._lock:
            job.status = "failed" if any(f.status == "failed" for f in job.files) else "done"
            job.finished_at = _now()
            self._save(job)

    # --- the folder -------------------------------------------------------------------------

    def _load(self) -> None:
        loaded = []
        for path in self._files():
            try:
                loaded.append(Job.from_dict(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError, KeyError) as exc:
                log.warning("upload job %s is unreadable and is dropped: %s", path.name, exc)
                path.unlink(missing_ok=True)
        for job in sorted(loaded, key=lambda j: j.created_at):
            self._jobs[job.id] = job
        self._trim()

    def _files(self) -> Iterator[Path]:
        if self.folder.is_dir():
            yield from sorted(self.folder.glob("*.json"))

    def _save(self, job: Job) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        # not fsynced: losing a job record takes a machine crash, and the reconcile at the next
        # start indexes its files anyway (the files themselves are fsynced)
        text = json.dumps(job.as_dict())
        write_atomically(self.folder / f"{job.id}.json", text, durable=False)

    def _trim(self) -> None:
        """Forget the oldest finished jobs beyond `history` (unfinished ones are kept)."""
        extra = len(self._jobs) - self.history
        for job_id in [j.id for j in self._jobs.values() if j.status in FINISHED][: max(extra, 0)]:
            del self._jobs[job_id]
            (self.folder / f"{job_id}.json").unlink(missing_ok=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
