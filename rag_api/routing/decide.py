"""The routing rule: narrow (one collection) or wide (several), decided without a model.

Precedence: explicit > declared signals (keywords, entities) > weak signals (description, then
language), each confirmed by its own probe > probe strength and margin. In order, the first that
applies:

1. **explicit** — one candidate (the request's `collections` names one): narrow to it.
2. **signals** — one candidate has strictly more keyword/entity matches than every other: narrow
   to it without probing the others.
3. **description** — one candidate's `description` shares strictly more words with the question
   (its own analyser: rag_api.routing.signals) than every other's: it is probed (together with
   step 4's candidates) and chosen when its probe scores at least STRONG and no candidate probed
   with it leads it by MARGIN — the signal stands in for the probe's lead, not for its strength.
   A description is prose, not a routing list: its words never narrow without the probe.
4. **language** — the candidates in the question's language (rag_api.routing.signals), when
   there are others, are probed first: one scoring at least CONFIDENT and leading the others in
   that language by MARGIN is chosen without probing the rest. A question's own language is its
   likeliest home: on a sample of the routing benchmark (60 questions a dataset) the question's
   own collection reached CONFIDENT for 89-97% of them, a collection in another language for 14
   of 360 question-collection pairs; a question in one language about a collection in another
   (tests/routing) finds no confident passage at home and goes on to every probe.
5. **probe** — every (remaining) candidate is probed at once. A candidate with no passage above its
   threshold scores 0 (its probe failed); when only one candidate's probe found anything, it is
   chosen. Otherwise the strongest (probe score; a language match, then more keyword/entity
   matches, then more description matches, then collections.yaml's order break ties) is chosen
   when its score is at least STRONG and beats the runner-up by at least MARGIN.
6. otherwise **wide**: every candidate with a passage above its threshold, fused by rank.

Steps 3 and 4 probe their candidates in one go, and step 5 the rest in one more: at most two
rounds of probes, each run concurrently (rag_api.routing.route).

A narrow choice that yields fewer than `router.min_passages` passages above its threshold is
widened to every candidate with passages (probing those not probed yet): "widened".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_api.routing.probe import Probe

STRONG = 0.3
CONFIDENT = 0.4
MARGIN = 0.15


def declared(probe: Probe) -> int:
    """Keyword and entity matches (the description and the language are weak signals)."""
    return sum(s.startswith(("keyword:", "entity:")) for s in probe.signals)


def described(probe: Probe) -> int:
    """Words the question shares with the collection's description."""
    return sum(s.startswith("description:") for s in probe.signals)


def by_signals(probes: Sequence[Probe]) -> Probe | None:
    """The one candidate with strictly the most keyword/entity matches, if any has one."""
    return _strictly_most(probes, declared)


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
            -declared(p),
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
