"""Which retrieval settings (those that need no re-index) answer a question set best, and whether
the gain is real or the file is too small to tell (docs/eval.md, "--tune"); a knob is a `Knob`."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_api.config import RetrievalConfig
from rag_api.evaluation.questions import Question
from rag_api.evaluation.run import MODES, RunResult, embed_all, families, label, run
from rag_api.points.collection import Collection

FOLDS = 5
NOISE_SE = 2.0  # a gain counts beyond this many standard errors
MIN_GAIN = 0.005  # and never below half a point
TOP_KS = (3, 5, 8, 10)
TOP_K_SLACK = 0.01
MAX_ROUNDS = 4
CHEAPEST = {"sparse": 0, "dense": 1, "hybrid": 2}


def _around(value: float, step: float, steps: int, low: float, high: float) -> list[float]:
    values = {round(value + step * i, 4) for i in range(-steps, steps + 1)}
    return sorted(v for v in values if low <= v <= high)


def _hybrid(s: RetrievalConfig) -> bool:
    return s.mode == "hybrid"


@dataclass(frozen=True)
class Knob:
    """A retrieval setting the tuner may change: the values to try from the current settings,
    when it matters at all, and whether it cuts answers (a threshold)."""

    name: str
    values: Callable[[RetrievalConfig], Iterable[Any]]
    applies: Callable[[RetrievalConfig], bool] = lambda s: True
    cuts: bool = False


KNOBS: tuple[Knob, ...] = (
    Knob("rrf_k", lambda s: (10, 30, 60, 100), lambda s: _hybrid(s) and s.fusion == "rrf"),
    Knob("candidates", lambda s: (20, 50, 100, 200), _hybrid),
    Knob(
        "threshold",
        lambda s: _around(s.threshold, 0.05, 4, -1.0, 1.0),
        lambda s: s.mode != "sparse",
        cuts=True,
    ),
    Knob("relative_threshold", lambda s: (0.0, 0.5, 0.7, 0.8, 0.9), cuts=True),
)


@dataclass
class Tuned:
    """What the search found; `as_dict` is the JSON the CLI and HTTP answer with."""

    current: RetrievalConfig
    best: RetrievalConfig
    in_sample: tuple[float, float]  # current, best
    cross_validated: float | None
    folds: int
    noise: float
    thresholds_tuned: bool
    tried: int
    family_scores: dict[str, float] = field(default_factory=dict)
    top_k_hits: dict[int, float] = field(default_factory=dict)

    @property
    def changes(self) -> dict[str, tuple[Any, Any]]:
        old, new = self.current.model_dump(), self.best.model_dump()
        return {k: (old[k], new[k]) for k in new if new[k] != old[k]}

    @property
    def gain(self) -> float:
        return self.in_sample[1] - self.in_sample[0]

    @property
    def cv_gain(self) -> float | None:
        if self.cross_validated is None:
            return None
        return self.cross_validated - self.in_sample[0]

    def refusal(self) -> str | None:
        """Why the best settings should not be written (None when they should)."""
        if not self.changes:
            return "the current settings are already the best found"
        if self.cv_gain is None:
            return "too few questions to cross-validate (at least 4 in scope are needed)"
        floor = max(self.noise, MIN_GAIN)
        if self.cv_gain <= floor:
            return (
                f"the cross-validated gain {self.cv_gain:+.4f} is within noise (±{floor:.4f}): "
                "add questions, or change the settings by hand"
            )
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "current": _block(self.current),
            "best": _block(self.best),
            "changes": {k: {"from": a, "to": b} for k, (a, b) in self.changes.items()},
            "score": {"current": _r(self.in_sample[0]), "best": _r(self.in_sample[1])},
            "gain": _r(self.gain),
            "cross_validated": {
                "folds": self.folds,
                "score": _r(self.cross_validated),
                "gain": _r(self.cv_gain),
            },
            "noise": _r(self.noise),
            "writable": self.refusal() is None,
            "refused": self.refusal(),
            "thresholds_tuned": self.thresholds_tuned,
            "tried": self.tried,
            "families": {k: _r(v) for k, v in self.family_scores.items()},
            "top_k_hits": {str(k): _r(v) for k, v in self.top_k_hits.items()},
        }


TUNED_KEYS = ("mode", "fusion", "rrf_k", "candidates", "threshold", "relative_threshold", "top_k")


def _block(settings: RetrievalConfig) -> dict[str, Any]:
    dumped = settings.model_dump()
    knobs = [k.name for k in KNOBS if k.name in dumped]
    return {key: dumped[key] for key in dict.fromkeys([*TUNED_KEYS, *knobs]) if key in dumped}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


class Tuner:
    """Runs settings over the questions once each (memoised), and searches them."""

    def __init__(
        self,
        collection: Collection,
        questions: list[Question],
        current: RetrievalConfig,
        k: int = 10,
        deadline: float | None = None,
        modes: Sequence[str] = MODES,
    ) -> None:
        self.collection, self.questions, self.current, self.k = collection, questions, current, k
        self.deadline = deadline
        self.modes = tuple(modes)
        self.thresholds = any(not q.in_scope for q in questions)
        self.knobs = [
            knob
            for knob in KNOBS
            if knob.name in RetrievalConfig.model_fields and (self.thresholds or not knob.cuts)
        ]
        self.vectors = embed_all(collection, questions, (*self.modes, current.mode))
        self.runs: dict[str, RunResult] = {}

    def result(self, settings: RetrievalConfig) -> RunResult:
        key = settings.model_dump_json()
        if key not in self.runs:
            self.runs[key] = run(
                self.collection, self.questions, settings, self.k, self.vectors, self.deadline
            )
        return self.runs[key]

    def mean(self, settings: RetrievalConfig, subset: Sequence[int]) -> float:
        judged = self.result(settings).judged
        return math.fsum(judged[i].score for i in subset) / len(subset)

    def climb(self, start: RetrievalConfig, subset: Sequence[int]) -> RetrievalConfig:
        best, score = start, self.mean(start, subset)
        for _ in range(MAX_ROUNDS):
            moved = False
            for knob in self.knobs:
                if not knob.applies(best):
                    continue
                for value in knob.values(best):
                    tried = _with(best, knob.name, value)
                    if tried is None or tried == best:
                        continue
                    if (tried_score := self.mean(tried, subset)) > score + 1e-9:
                        best, score, moved = tried, tried_score, True
            if not moved:
                break
        return best

    def search(self, subset: Sequence[int]) -> tuple[RetrievalConfig, dict[str, float]]:
        """The best settings on these questions, and each family's best score."""
        scored = []
        for start in families(self.current, self.modes):
            found = self.climb(start, subset)
            rank = (
                self.mean(found, subset),
                _same_family(found, self.current),
                -CHEAPEST[found.mode],
            )
            scored.append((rank, found))
        best = max(scored, key=lambda item: item[0])[1]
        return best, {label(found): rank[0] for rank, found in scored}

    def tune(self, folds: int = FOLDS, seed: int = 0) -> Tuned:
        everyone = range(len(self.questions))
        best, family_scores = self.search(everyone)
        if self.mean(best, everyone) <= self.mean(self.current, everyone) + 1e-9:
            best = self.current
        best, hits = self._top_k(best)
        current_scores = [j.score for j in self.result(self.current).judged]
        best_scores = [j.score for j in self.result(best).judged]
        cross, used = self.cross_validate(folds, seed)
        diffs = [b - c for b, c in zip(best_scores, current_scores, strict=True)]
        noise = NOISE_SE * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0
        return Tuned(
            current=self.current,
            best=best,
            in_sample=(statistics.fmean(current_scores), statistics.fmean(best_scores)),
            cross_validated=cross,
            folds=used,
            noise=noise,
            thresholds_tuned=self.thresholds,
            tried=len(self.runs),
            family_scores=family_scores,
            top_k_hits=hits,
        )

    def cross_validate(self, folds: int, seed: int) -> tuple[float | None, int]:
        """The mean held-out score of settings chosen without the held-out questions."""
        n = len(self.questions)
        folds = min(folds, n // 2)
        in_scope = sum(q.in_scope for q in self.questions)
        if folds < 2 or in_scope < 4:
            return None, 0
        order = list(range(n))
        random.Random(seed).shuffle(order)
        held: list[float] = [0.0] * n
        for fold in range(folds):
            test = order[fold::folds]
            train = sorted(set(order) - set(test))
            chosen, _ = self.search(train)
            if self.mean(chosen, train) <= self.mean(self.current, train) + 1e-9:
                chosen = self.current
            judged = self.result(chosen).judged
            for i in test:
                held[i] = judged[i].score
        return statistics.fmean(held), folds

    def _top_k(self, best: RetrievalConfig) -> tuple[RetrievalConfig, dict[int, float]]:
        """The fewest passages that hold a right one as often as the most do (within a point)."""
        result = self.result(best)
        sizes = sorted({*TOP_KS, self.current.top_k})
        hits = {n: result.hits_within(n) or 0.0 for n in sizes}
        top = max(hits.values())
        chosen = next(n for n in sizes if hits[n] >= top - TOP_K_SLACK)
        return (_with(best, "top_k", chosen) or best), hits


def _with(settings: RetrievalConfig, name: str, value: Any) -> RetrievalConfig | None:
    """The settings with one value changed, validated (None when the value is not allowed)."""
    try:
        return RetrievalConfig.model_validate({**settings.model_dump(), name: value})
    except ValueError:
        return None


def _same_family(a: RetrievalConfig, b: RetrievalConfig) -> bool:
    return a.mode == b.mode and (a.mode != "hybrid" or a.fusion == b.fusion)
