"""A search of a resolved target (rag_api.routing.target): the named collection's or `auto`'s, as
one outcome, `Found`. The only place that tells the two apart after the resolver: /query, the
/v1/rag reads, the OpenAI routes and the CLI all search through `search_target`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_api.catalog import Catalog
from rag_api.config import Mode
from rag_api.points.collection import Collection
from rag_api.routing.route import RouteRequest, Routing, route_search
from rag_api.routing.target import Target
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search


@dataclass
class Found:
    """The passages for a request, from one collection or from several (`auto`)."""

    name: str  # what the request named: the collection, or the router's name
    answering: Collection  # who answers: the named collection, or the one `auto` chose
    mode: Mode
    passages: list[Passage]
    timings_ms: dict[str, float]
    warning: str | None = None
    routing: Routing | None = None  # `auto`: which collections were searched and why
    routed_language: str | None = None  # `auto`: the language it answers in

    @property
    def language(self) -> str:
        """The language the answer is given in."""
        return self.routed_language or self.answering.cfg.language

    def head(self) -> dict[str, Any]:
        """What every answer says of where it looked: collection, mode (and `routing`)."""
        head: dict[str, Any] = {"collection": self.name, "mode": self.mode}
        if self.routing is not None:
            head["routing"] = self.routing.as_dict()
        return head


def search_target(hub: Catalog, target: Target, request: SearchRequest) -> Found:
    """`request` searched where `target` points."""
    if target.collection is None:
        routed = route_search(hub, RouteRequest(request, target.candidates))
        return Found(
            hub.config.router.name,
            routed.answering,
            routed.mode,
            routed.passages,
            dict(routed.timings_ms),
            routed.warning,
            routed.routing,
            routed.language,
        )
    kb = target.collection
    outcome = search(kb, request)
    return Found(
        kb.name, kb, outcome.mode, outcome.passages, dict(outcome.timings_ms), outcome.warning
    )
