"""What the upload routes answer (documented in /openapi.json)."""

from __future__ import annotations

from typing import Literal

from rag_api.schema import Answer

Status = Literal["queued", "indexing", "done", "failed"]


class JobFileAnswer(Answer):
    path: str  # relative to the kb folder, POSIX
    size: int
    status: Status
    chunks: int | None  # the file's chunks once indexed
    embedded: int  # chunks embedded for this job
    skipped: int  # chunks not embedded: the same text was stored already (vector reused)
    error: str | None
    progress: str | None = None  # while indexing, where a long read has got ("OCR page 3/12")


class JobAnswer(Answer):
    """An upload job: done when every file was indexed, failed when any was not."""

    id: str
    status: Status
    collection: str
    created_at: str
    finished_at: str | None
    files: list[JobFileAnswer]


class JobList(Answer):
    jobs: list[JobAnswer]  # the most recent first


class FileQualityAnswer(Answer):
    """A kb file's chunks by their quality label (docs/labels.md)."""

    labelled_chunks: int  # chunks with a quality label
    low_quality_chunks: int  # of them, below min_quality (searches leave them out by default)
    min_quality: float  # the collection's retrieval.min_quality
    quality_reasons: list[str]  # what lowered the low ones, most common first
    mostly_low_quality: bool  # more than half are low: the file extracted as garbage


class KbFileAnswer(Answer):
    path: str
    size: int
    modified: str | None  # ISO 8601, UTC
    state: Literal["indexed", "stale", "pending", "failed"]
    chunks: int  # chunks the store holds for it
    reason: str | None  # why it failed (or is stale)
    quality: FileQualityAnswer | None = None  # null: none of its chunks is labelled


class KbFileList(Answer):
    collection: str
    files: list[KbFileAnswer]


class Deleted(Answer):
    deleted: str
    chunks_removed: int
