"""A probe: one candidate collection searched for the question with its own embedder and BM25,
and how strongly its best passage answers, comparable across models (docs/routing.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_api.points.collection import Collection
from rag_api.points.typical import TypicalPassages
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchOutcome, SearchRequest, search

MIN_SAMPLE = 32  # fewer passages than this tell no crowd from the best: the cosine is trusted
STAND_OUT_FULL = 8.0  # standard deviations above the typical passage that count as certain


@dataclass
class Probe:
    """A candidate, what the question says about it, and (once searched) its passages and score."""

    collection: Collection
    signals: list[str] = field(default_factory=list)
    outcome: SearchOutcome | None = None
    score: float | None = None
    stand_out: float | None = None
    coverage: float | None = None

    @property
    def name(self) -> str:
        return self.collection.name

    @property
    def passages(self) -> list[Passage]:
        return self.outcome.passages if self.outcome is not None else []

    def as_dict(self) -> dict[str, object]:
        return {
            "collection": self.name,
            "probe_score": None if self.score is None else round(self.score, 4),
            "signals": self.signals,
            "passages": None if self.outcome is None else len(self.passages),
        }


def run_probe(probe: Probe, request: SearchRequest, typical: TypicalPassages) -> Probe:
    """Search the candidate (every filter, threshold and limit of the request applies) and
    score its best passage."""
    collection = probe.collection
    probe.outcome = search(collection, request)
    passages = probe.outcome.passages
    if not passages:
        probe.score = 0.0
        return probe
    best = passages[0]
    probe.coverage = _coverage(collection, request.query, best.text)
    probe.stand_out = _stand_out(collection, request.query, best, typical)
    certainty = min(max(probe.stand_out, 0.0) / STAND_OUT_FULL, 1.0)
    probe.score = (2.0 * probe.coverage + certainty) / 3.0
    return probe


def _coverage(collection: Collection, question: str, text: str) -> float:
    encoder = collection.sparse
    asked = encoder.terms(question)
    return len(asked & encoder.terms(text)) / len(asked) if asked else 0.0


def _stand_out(
    collection: Collection, question: str, best: Passage, typical: TypicalPassages
) -> float:
    if best.dense_score is None:  # sparse mode: no cosine to compare
        return 0.0
    sample = typical.of(collection)
    if sample is None or len(sample) < MIN_SAMPLE:
        return STAND_OUT_FULL
    cosines = sample @ collection.embed_query(question)
    spread = float(cosines.std())
    return (best.dense_score - float(cosines.mean())) / max(spread, 1e-6)
