"""The hub's jobs (`hub.jobs`): every job of every kind, their lanes and claims, and the one way
work runs as a job (`run`). Kept in memory, the newest `history` of each kind (an unfinished job
is never forgotten); the kinds given a folder (`keep`) also on disk, and outlive a restart."""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_api.errors import JobNotFound
from rag_api.jobs.claims import Claims
from rag_api.jobs.folder import JobFolder
from rag_api.jobs.job import Job, JobFile, Kind, Progress, error_of, now
from rag_api.jobs.lane import Lane, Stopped, Work

HISTORY = 50  # jobs kept per kind, unless `history_of` says otherwise
Visible = Callable[[str], bool]  # whether the caller may see a collection (and so its jobs)


class Jobs:
    """Every method may be called from any thread."""

    def __init__(self, history: int = HISTORY, history_of: Mapping[str, int] | None = None) -> None:
        self.history = history
        self.history_of = dict(history_of or {})
        self.claims = Claims()
        self._jobs: dict[str, Job] = {}
        self._folders: dict[str, JobFolder] = {}
        self._lanes: dict[str, Lane] = {}
        self._lock = threading.RLock()

    # --- records ----------------------------------------------------------------------------

    def create(
        self,
        kind: Kind,
        collections: list[str],
        *,
        request: dict[str, Any] | None = None,
        files: list[JobFile] | None = None,
    ) -> Job:
        """A new job, queued."""
        job = Job(uuid.uuid4().hex, kind, list(collections), request=request, files=files)
        with self._lock:
            self._jobs[job.id] = job
            self._save(job)
            self._trim(kind)
        return job

    def get(self, job_id: str, visible: Visible | None = None) -> dict[str, Any]:
        """A job's view; JobNotFound for an unknown one, or one on a collection not `visible`."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and _shown(job, visible):
                return job.view()
        raise self.missing(job_id)

    def list(
        self,
        kind: str | None = None,
        collection: str | None = None,
        status: str | None = None,
        visible: Visible | None = None,
    ) -> list[dict[str, Any]]:
        """The views of the kept jobs that match, the most recent first."""
        with self._lock:
            jobs = [
                job
                for job in reversed(self._jobs.values())
                if (kind is None or job.kind == kind)
                and (collection is None or collection in job.collections)
                and (status is None or status in (job.status, job.shown_status))
                and _shown(job, visible)
            ]
            jobs.sort(
                key=lambda job: job.created_at, reverse=True
            )  # stable: ties stay newest first
            return [job.view() for job in jobs]

    def missing(self, job_id: str) -> JobNotFound:
        uploads = self.history_of.get("upload", self.history)
        return JobNotFound(
            f"no job '{job_id}': only the last {self.history} jobs of each kind are kept, and "
            f"of upload jobs {uploads} (RAG_UPLOAD_HISTORY); the files of older uploads are in "
            "the kb folder, and GET /v1/collections/{collection}/files shows their index state"
        )

    def unfinished(self, kind: Kind) -> list[Job]:
        """The jobs of `kind` not done nor failed, in the order they were created."""
        with self._lock:
            return [job for job in self._jobs.values() if job.kind == kind and not job.finished]

    # --- a job's life -----------------------------------------------------------------------

    def run(self, job: Job, work: Work) -> Any:
        """Run `work` as `job`, here and now: running, then done with its answer (kept as JSON),
        or failed with the error it raised (re-raised). An answer that says it could not run (a
        check's `error`) fails the job too, keeping the answer. The one way any kind's work runs:
        in the caller's thread, in a lane's, or in a thread of its own."""
        self.start(job)
        try:
            answer = work(functools.partial(self.report, job))
        except Stopped:
            self.requeue(job)
            raise
        except Exception as exc:
            self.finish(job, None, error_of(exc))
            raise
        document = as_json(answer)
        error = document.get("error") if isinstance(document, dict) else None
        self.finish(job, document, error if isinstance(error, dict) else None)
        return answer

    def start(self, job: Job) -> None:
        with self._lock:
            job.status, job.started_at, job.error = "running", now(), None

    def report(self, job: Job, phase: str, done: int, total: int, **detail: Any) -> None:
        """Where the running job has got (`detail`: its kind's own counts)."""
        with self._lock:
            job.progress = Progress(phase, done, total, detail or None)

    def finish(self, job: Job, result: Any, error: dict[str, str] | None = None) -> None:
        """Done with `result`, or failed with `error` ({code, message})."""
        with self._lock:
            job.result, job.error = result, error
            job.status = "failed" if error else "done"
            job.finished_at = now()
            self._save(job)

    def requeue(self, job: Job) -> None:
        """Back to queued: its lane stopped before it finished."""
        with self._lock:
            job.status, job.started_at, job.progress = "queued", None, None

    @contextmanager
    def changing(self, job: Job) -> Iterator[Job]:
        """Change what is particular to a kind (an upload's files) as a reader sees it: whole."""
        with self._lock:
            yield job

    # --- lanes and folders ------------------------------------------------------------------

    def lane(self, name: str, capacity: int | None = None) -> Lane:
        """The lane of that name (made at the first call, with its `capacity`)."""
        with self._lock:
            if name not in self._lanes:
                self._lanes[name] = Lane(name, self.run, capacity)
            return self._lanes[name]

    def keep(self, kind: Kind, folder: Path) -> None:
        """Keep the jobs of `kind` in `folder` from now on; the ones there are loaded (those a
        restart cut short are unfinished: their owner queues them again)."""
        with self._lock:
            self._folders[kind] = JobFolder(folder, kind)
            for job in self._folders[kind].load():
                self._jobs.setdefault(job.id, job)
            self._trim(kind)

    def _save(self, job: Job) -> None:
        folder = self._folders.get(job.kind)
        if folder is not None:
            folder.save(job)

    def _trim(self, kind: str) -> None:
        """Forget the oldest finished jobs of `kind` beyond its history (unfinished ones stay)."""
        mine = [job for job in self._jobs.values() if job.kind == kind]
        extra = len(mine) - self.history_of.get(kind, self.history)
        for job in [job for job in mine if job.finished][: max(extra, 0)]:
            del self._jobs[job.id]
            if (folder := self._folders.get(kind)) is not None:
                folder.remove(job.id)


def _shown(job: Job, visible: Visible | None) -> bool:
    return visible is None or all(visible(name) for name in job.collections)


def as_json(answer: Any) -> Any:
    """An answer as JSON: its `as_dict()` (the hub's dataclasses), a model's dump, or itself."""
    if hasattr(answer, "as_dict"):
        return answer.as_dict()
    if hasattr(answer, "model_dump"):
        return answer.model_dump(mode="json")
    return answer
