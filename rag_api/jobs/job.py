"""A job: one run of work (an upload's indexing, a backup, a check, a migration, a source's
sync) and how far it got; `view()` is the one shape GET /v1/jobs answers for every kind."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from rag_api.errors import RagError

Kind = Literal["upload", "backup", "check", "migrate", "sync"]
Status = Literal["queued", "running", "done", "failed"]
FileStatus = Literal["queued", "indexing", "done", "failed"]
FINISHED = ("done", "failed")
# the word a kind's clients have always read for `running` (an upload's job is `indexing`)
RUNNING_AS: dict[str, str] = {"upload": "indexing"}


@dataclass
class JobFile:
    """One file of an upload job."""

    path: str  # relative to the kb folder, POSIX
    size: int
    status: FileStatus = "queued"
    chunks: int | None = None  # the file's chunks once indexed
    embedded: int = 0  # chunks whose vectors were computed for this job
    skipped: int = 0  # chunks not embedded: their text was stored already (vector reused)
    error: str | None = None
    progress: str | None = None  # while indexing, where a long read has got ("OCR page 3/12")


@dataclass
class Progress:
    phase: str  # "copy", "catch-up 1", "files", "documents", ...
    done: int
    total: int
    detail: dict[str, Any] | None = None  # a kind's own counts (a sync's: listed, indexed, ...)


@dataclass
class Job:
    id: str
    kind: Kind
    collections: list[str]  # the collections it works on (a backup of all names each one)
    status: Status = "queued"
    created_at: str = field(default_factory=lambda: now())
    started_at: str | None = None
    finished_at: str | None = None
    progress: Progress | None = None
    request: dict[str, Any] | None = None  # what was asked (a backup's folder, a check's sample)
    result: Any = None  # the answer of a job done (and of a check that found it could not run)
    error: dict[str, str] | None = None  # {code, message}, as the hub's errors
    files: list[JobFile] | None = None  # an upload's files

    @property
    def collection(self) -> str | None:
        """The one collection the job works on; None for a job on several (or none)."""
        return self.collections[0] if len(self.collections) == 1 else None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def shown_status(self) -> str:
        """The status as clients read it (an upload being indexed says `indexing`)."""
        return RUNNING_AS.get(self.kind, "running") if self.status == "running" else self.status

    def view(self) -> dict[str, Any]:
        """The job as GET /v1/jobs answers it (rag_api.jobs.models.JobAnswer)."""
        shown = self.as_dict()
        shown["status"] = self.shown_status
        shown["collection"] = self.collection
        if self.files is None:
            del shown["files"]
        if shown["progress"] is not None and shown["progress"]["detail"] is None:
            del shown["progress"]["detail"]
        return shown

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], kind: Kind) -> Job:
        """A job as `as_dict` wrote it, or an upload job as the hub wrote it before there were
        other kinds (one `collection`, `indexing` for running)."""
        data = dict(data)
        one = data.pop("collection", None)  # the view's, or the only one of an older upload job
        data.setdefault("collections", [one] if one else [])
        data.setdefault("kind", kind)
        if data.get("status") == RUNNING_AS.get(data["kind"]):
            data["status"] = "running"
        if data.get("progress") is not None:
            data["progress"] = Progress(**data["progress"])
        if data.get("files") is not None:
            data["files"] = [JobFile(**item) for item in data["files"]]
        return cls(**data)


def error_of(exc: BaseException) -> dict[str, str]:
    """The error a failed job carries, in the hub's shape: {code, message}."""
    if isinstance(exc, RagError):
        return {"code": exc.code, "message": exc.message}
    return {"code": "INTERNAL_ERROR", "message": f"internal error: {type(exc).__name__}: {exc}"}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
