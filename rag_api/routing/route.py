"""`auto`: search the collection(s) a question belongs to, and say which and why: probes, the
wide search's fusion, who answers and in which language (docs/routing.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rag_api.catalog import Catalog
from rag_api.config import Mode
from rag_api.embedding.languages import text_language
from rag_api.errors import InvalidRequest
from rag_api.points.collection import Collection
from rag_api.routing.decide import (
    by_description,
    by_language,
    by_probe,
    by_signals,
    confirmed,
    speaks_the_question,
    strongest_first,
)
from rag_api.routing.probe import Probe, run_probe
from rag_api.routing.signals import (
    analysed,
    declared_matches,
    description_matches,
)
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest
from rag_api.store.fusion import rank_fusion

CROSS_RRF_K = 10  # small: the order of each list matters more than its length


@dataclass(frozen=True)
class RouteRequest:
    """A search for `auto`; `collections` restricts the candidates (None: every routable one)."""

    search: SearchRequest
    collections: tuple[str, ...] | None = None


@dataclass
class Routing:
    """Which collections were searched and why: the `routing` block of every `auto` answer."""

    decision: str  # narrow | wide
    reason: str  # explicit | signals | language | probe | wide | widened
    candidates: list[Probe]
    searched: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reason": self.reason,
            "candidates": [p.as_dict() for p in self.candidates],
            "searched": self.searched,
        }


@dataclass
class RoutedOutcome:
    """The passages (each naming its collection), the routing, who answers and in which language."""

    passages: list[Passage]
    routing: Routing
    answering: Collection
    language: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    warning: str | None = None


def candidates(hub: Catalog, names: tuple[str, ...] | None) -> list[Collection]:
    """The collections `auto` chooses among: the named ones (each must exist and be enabled),
    else every enabled collection that routing is enabled for, in collections.yaml's order."""
    if names is not None:
        if not names:
            raise InvalidRequest("collections: name at least one collection", param="collections")
        unique = list(dict.fromkeys(names))
        for name in unique:
            hub.config.collection(name)  # 404 COLLECTION_NOT_FOUND
        return [hub.collection(name) for name in unique]  # 409 when disabled
    found = [
        hub.collections[name]
        for name in hub.visible()
        if hub.collections[name].cfg.enabled and hub.collections[name].cfg.routing.enabled
    ]
    if not found:
        raise InvalidRequest(f"'{hub.config.router.name}': no collection has routing enabled")
    return found


def route_search(hub: Catalog, request: RouteRequest) -> RoutedOutcome:
    """Decide where to look, search there, and fuse what was found (see the module docstring)."""
    started = time.perf_counter()
    question = request.search.query
    pool = candidates(hub, request.collections)
    language = text_language(question, [c.cfg.language for c in pool])
    probes = [Probe(c, _signals(question, c, language)) for c in pool]
    typical = hub.typical
    minimum = hub.config.router.min_passages

    def probe_all(todo: list[Probe]) -> None:
        """One round: the probes at once on the pool (one alone on this thread)."""
        if len(todo) == 1:
            run_probe(todo[0], request.search, typical)
        else:
            list(hub.fanout.map(lambda p: run_probe(p, request.search, typical), todo))

    chosen, reason = _choose(probes, probe_all)
    if chosen is not None and len(chosen.passages) < minimum and len(probes) > 1:
        probe_all([p for p in probes if p.outcome is None])
        chosen, reason = None, "widened"
    if chosen is not None:
        searched = [chosen]
        decision = "narrow"
    else:
        searched = [p for p in strongest_first(probes) if p.passages]
        decision, reason = "wide", reason if reason == "widened" else "wide"
    passages = _merge(searched, request.search.top_k)
    answering = _answering(passages, probes)
    routing = Routing(decision, reason, probes, [p.name for p in searched])
    outcome = next((p for p in probes if p.collection is answering), probes[0]).outcome
    return RoutedOutcome(
        passages,
        routing,
        answering,
        _answer_language(passages, hub, answering, language),
        outcome.mode if outcome is not None else answering.cfg.retrieval.mode,
        {"route": round((time.perf_counter() - started) * 1000, 3)},
        next((p.outcome.warning for p in searched if p.outcome and p.outcome.warning), None),
    )


def _choose(
    probes: list[Probe], probe_all: Callable[[list[Probe]], None]
) -> tuple[Probe | None, str]:
    """The rule of rag_api.routing.decide (None: search wide), probing only what each step
    needs: the description's and the language's candidates in one round, the rest in another."""
    if len(probes) == 1:
        probe_all(probes)
        return probes[0], "explicit"
    if (chosen := by_signals(probes)) is not None:
        probe_all([chosen])
        return chosen, "signals"
    hinted = by_description(probes)
    home = [p for p in probes if speaks_the_question(p)]
    if len(home) == len(probes):
        home = []  # every candidate speaks it: the language tells them apart no better
    first_round = [p for p in probes if p is hinted or any(p is h for h in home)]
    probe_all(first_round)
    if hinted is not None and (chosen := confirmed(hinted, first_round)) is not None:
        return chosen, "description"
    if home and (chosen := by_language(home)) is not None:
        return chosen, "language"
    probe_all([p for p in probes if p.outcome is None])
    return by_probe(probes), "probe"


def _signals(question: str, collection: Collection, language: str | None) -> list[str]:
    """What the question says about one candidate (rag_api.routing.signals)."""
    cfg = collection.cfg
    terms = collection.sparse.terms
    found = declared_matches(question, cfg.routing)
    found += description_matches(question, cfg.description, lambda t: analysed(terms, t))
    if language is not None and cfg.language == language:
        found.append(f"language:{language}")
    return found


def _merge(searched: list[Probe], top_k: int | None) -> list[Passage]:
    """One list of passages naming their collection: a narrow search's as it is, a wide one's
    by weighted rank fusion."""
    lists = [[replace(p, collection=probe.name) for p in probe.passages] for probe in searched]
    if not lists:
        return []
    limit = top_k or searched[0].collection.cfg.retrieval.top_k
    if len(lists) == 1:
        return lists[0][:limit]
    best = max(probe.score or 0.0 for probe in searched) or 1.0
    weights = [max(probe.score or 0.0, 1e-6) / best for probe in searched]
    by_key = {f"{p.collection}/{p.id}": p for passages in lists for p in passages}
    keys = [[f"{p.collection}/{p.id}" for p in passages] for passages in lists]
    return [by_key[key] for key, _ in rank_fusion(keys, CROSS_RRF_K, weights)[:limit]]


def _answering(passages: list[Passage], probes: list[Probe]) -> Collection:
    if passages:
        return next(p.collection for p in probes if p.name == passages[0].collection)
    return strongest_first([p for p in probes if p.outcome is not None] or probes)[0].collection


def _answer_language(
    passages: list[Passage], hub: Catalog, answering: Collection, asked: str | None
) -> str:
    """The answering collection's language; the question's (when guessed) where the passages
    mix languages, or where there are none (the no-evidence answer)."""
    languages = {hub.collections[p.collection].cfg.language for p in passages if p.collection}
    if asked is not None and (len(languages) > 1 or not passages):
        return asked
    return answering.cfg.language
