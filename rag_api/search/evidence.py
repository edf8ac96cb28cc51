"""A source's evidence from all its chunks: each passage gains `share` of its source's next best
candidates' scores (docs/architecture.md, "Source evidence"; measured in docs/retrieval.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TypeVar

P = TypeVar("P")
SIBLINGS = 2  # the 2nd and 3rd chunk count; more adds noise from long documents


def with_source_evidence(
    passages: Sequence[P],
    share: float,
    source_of: Callable[[P], str],
    score_of: Callable[[P], float],
) -> list[tuple[P, float]]:
    """(passage, evidence score) best first; ties keep the input order."""
    if share <= 0:
        return [(p, score_of(p)) for p in passages]
    keyed = [(source_of(p), score_of(p)) for p in passages]
    by_source: dict[str, list[float]] = defaultdict(list)
    for source, score in keyed:
        by_source[source].append(max(score, 0.0))
    # a passage's siblings: its source's best SIBLINGS + 1 scores less its own, if among them
    best = {
        source: sorted(scores, reverse=True)[: SIBLINGS + 1] for source, scores in by_source.items()
    }
    scored = []
    for position, (source, own) in enumerate(keyed):
        siblings = best[source]
        if (clamped := max(own, 0.0)) in siblings:
            at = siblings.index(clamped)
            siblings = siblings[:at] + siblings[at + 1 :]
        scored.append((own + share * sum(siblings[:SIBLINGS]), position))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(passages[position], score) for score, position in scored]
