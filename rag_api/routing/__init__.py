"""Routing by the question: `auto` (router.name in collections.yaml) searches the collection(s) a
question belongs to; .target resolves a request to a named collection or `auto`; .decide, .probe,
.signals and .route are the rule and its parts (docs/routing.md). May import hub and below."""

from rag_api.routing.route import RoutedOutcome, RouteRequest, Routing, route_search
from rag_api.routing.target import Target, named, resolve

__all__ = [
    "RouteRequest",
    "RoutedOutcome",
    "Routing",
    "Target",
    "named",
    "resolve",
    "route_search",
]
