"""What the upload routes answer (documented in /openapi.json)."""

from __future__ import annotations

from typing import Literal

from rag_api.schema import Answer


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
