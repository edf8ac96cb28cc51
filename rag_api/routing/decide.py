"""The routing rule: narrow (one collection) or wide (several), decided without a model.

In order, the first that applies:

1. **explicit** — one candidate (the request's `collections` names one): narrow to it.
2. **signals** — one candidate has strictly more keyword/entity matches than every other: narrow
   to it without probing the others.
3. **probe** — every candidate is probed at once. A candidate with no passage above its
   threshold scores 0 (its probe failed); when only one candidate's probe found anything, it is
   chosen. Otherwise the strongest (probe score; a language match, then more keyword/entity
   matches, then collections.yaml's order break ties) is chosen when its score is at least STRONG
   and beats the runner-up by at least MARGIN.
4. otherwise **wide**: every candidate with a passage above its threshold, fused by rank.

A narrow choice that yields fewer than `router.min_passages` passages above its threshold is
widened to every candidate with passages (probing those not probed yet): "widened".
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_api.routing.probe import Probe

STRONG = 0.3
MARGIN = 0.15


def declared(probe: Probe) -> int:
    """Keyword and entity matches (the language is not a declared signal)."""
    return sum(not s.startswith("language:") for s in probe.signals)


def by_signals(probes: Sequence[Probe]) -> Probe | None:
    """The one candidate with strictly the most keyword/entity matches, if any has one."""
    counts = sorted((declared(p) for p in probes), reverse=True)
    if not counts or counts[0] == 0 or (len(counts) > 1 and counts[1] == counts[0]):
        return None
    return max(probes, key=declared)


def strongest_first(probes: Sequence[Probe]) -> list[Probe]:
    """Probed candidates by strength; ties by language match, declared matches, then config order."""
    order = {id(p): i for i, p in enumerate(probes)}
    return sorted(
        probes,
        key=lambda p: (
            -(p.score or 0.0),
            not any(s.startswith("language:") for s in p.signals),
            -declared(p),
            order[id(p)],
        ),
    )


def by_probe(probes: Sequence[Probe]) -> Probe | None:
    """The strongest probe when it is strong and clearly ahead, else None (search wide)."""
    found = [p for p in probes if p.passages]
    if len(found) == 1:
        return found[0]
    ranked = strongest_first(probes)
    best = ranked[0]
    runner_up = (ranked[1].score or 0.0) if len(ranked) > 1 else 0.0
    if (best.score or 0.0) >= STRONG and (best.score or 0.0) - runner_up >= MARGIN:
        return best
    return None
