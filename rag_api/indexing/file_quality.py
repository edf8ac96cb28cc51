"""How good each kb file's chunks are, by their labels (docs/labels.md): a file whose labelled
chunks are mostly below the collection's retrieval.min_quality extracted as garbage (a scan read
badly, a broken encoding). `rag-hub check` reports such files, the console's file listing shows
each file's summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rag_api import payload
from rag_api.points.collection import Collection
from rag_api.store import Selector

TOP_REASONS = 3  # the reasons a summary names, most common first
FIELDS = [payload.ORIGIN, payload.FILE, payload.QUALITY, payload.QUALITY_REASONS]


@dataclass
class FileQuality:
    """One file's labelled chunks against a minimum quality."""

    min_quality: float
    labelled: int = 0  # chunks with a quality label (chunks written before labels have none)
    low: int = 0  # of them, below min_quality
    reasons: Counter[str] = field(default_factory=Counter)  # what lowered the low ones

    def add(self, chunk: payload.StoredChunk) -> None:
        if chunk.quality is None:
            return
        self.labelled += 1
        if chunk.quality < self.min_quality:
            self.low += 1
            self.reasons.update(set(chunk.quality_reasons))

    @property
    def mostly_low(self) -> bool:
        """More than half of its labelled chunks are below the minimum."""
        return self.low * 2 > self.labelled

    def top_reasons(self) -> list[str]:
        """The reasons of its low chunks, most common first (ties by name)."""
        ranked = sorted(self.reasons.items(), key=lambda item: (-item[1], item[0]))
        return [reason for reason, _ in ranked[:TOP_REASONS]]

    def view(self) -> dict[str, Any]:
        """The summary the file listing shows (GET /v1/collections/{c}/files)."""
        return {
            "labelled_chunks": self.labelled,
            "low_quality_chunks": self.low,
            "min_quality": self.min_quality,
            "quality_reasons": self.top_reasons(),
            "mostly_low_quality": self.mostly_low,
        }

    def describe(self, rel: str) -> str:
        """The check's line about a file whose chunks are mostly low quality."""
        reasons = ", ".join(self.top_reasons()) or "no reason given"
        return (
            f"{rel}: {self.low} of {self.labelled} chunks below quality {self.min_quality:g} "
            f"({reasons}) — this file extracted as garbage; searches leave those chunks out"
        )


def file_quality(collection: Collection) -> dict[str, FileQuality]:
    """Each kb file with labelled chunks, against the collection's retrieval.min_quality."""
    floor = collection.cfg.retrieval.min_quality
    found: dict[str, FileQuality] = {}
    for record in collection.scan(Selector(origin=payload.FROM_FILE), fields=FIELDS):
        chunk = payload.StoredChunk(record.payload)
        if chunk.file is not None and chunk.quality is not None:
            found.setdefault(chunk.file, FileQuality(floor)).add(chunk)
    return found
