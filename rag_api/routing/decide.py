"""The routing rule: narrow (one collection) or wide (several), decided without a model; the
steps in order are in docs/routing.md, "How auto decides"."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_api.routing.probe import Probe

STRONG = 0.3
CONFIDENT = 0.4
MARGIN = 0.15


def keyword_hits(probe: Probe) -> int:
    """Keyword and entity matches (the description and the language are weak signals)."""
    return sum(s.startswith(("keyword:", "entity:")) for s in probe.signals)


def described(probe: Probe) -> int:
    """Words the question shares with the collection's description."""
    return sum(s.startswith("description:") for s in probe.signals)


def by_signals(probes: Sequence[Probe]) -> Probe | None:
    """The one candidate with strictly the most keyword/entity matches, if any has one."""
    return _strictly_most(probes, keyword_hits)


def by_description(probes: Sequence[Probe]) -> Probe | None:
    """The one candidate whose description shares strictly the most words with the question."""
    return _strictly_most(probes, described)


def confirmed(hinted: Probe, probed: Sequence[Probe]) -> Probe | None:
    """The description's candidate once its own probe agrees: it scores at least STRONG and no
    other candidate probed with it leads it by MARGIN (the signal stands in for the lead)."""
    score = hinted.score or 0.0
    rival = max((p.score or 0.0 for p in probed if p is not hinted), default=0.0)
    return hinted if score >= STRONG and rival - score < MARGIN else None


def _strictly_most(probes: Sequence[Probe], count: Callable[[Probe], int]) -> Probe | None:
    counts = sorted((count(p) for p in probes), reverse=True)
    if not counts or counts[0] == 0 or (len(counts) > 1 and counts[1] == counts[0]):
        return None
    return max(probes, key=count)


def strongest_first(probes: Sequence[Probe]) -> list[Probe]:
    """Probed candidates by strength; ties by language match, declared matches, description
    matches, then config order."""
    order = {id(p): i for i, p in enumerate(probes)}
    return sorted(
        probes,
        key=lambda p: (
            -(p.score or 0.0),
            not speaks_the_question(p),
            -keyword_hits(p),
            -described(p),
            order[id(p)],
        ),
    )


def speaks_the_question(probe: Probe) -> bool:
    return any(s.startswith("language:") for s in probe.signals)


def by_language(probes: Sequence[Probe]) -> Probe | None:
    """Among probes of the question's language (the others not probed yet): the strongest when
    it is confident and clearly ahead of the rest of them."""
    return _ahead(probes, CONFIDENT)


def by_probe(probes: Sequence[Probe]) -> Probe | None:
    """The strongest probe when it is strong and clearly ahead, else None (search wide)."""
    found = [p for p in probes if p.passages]
    if len(found) == 1:
        return found[0]
    return _ahead(probes, STRONG)


def _ahead(probes: Sequence[Probe], bar: float) -> Probe | None:
    ranked = strongest_first(probes)
    best = ranked[0]
    runner_up = (ranked[1].score or 0.0) if len(ranked) > 1 else 0.0
    if (best.score or 0.0) >= bar and (best.score or 0.0) - runner_up >= MARGIN:
        return best
    return None
