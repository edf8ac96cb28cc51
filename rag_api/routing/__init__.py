"""Routing by the question: `auto` (router.name in collections.yaml) searches the collection(s) a
question belongs to; .target resolves a request to a named collection or `auto`, and .found
searches what it resolved to, one outcome for both; .decide, .probe, .signals and .route are the
rule and its parts (docs/routing.md). May import the catalog and below."""

from rag_api.routing.found import Found, search_target
from rag_api.routing.route import RoutedOutcome, RouteRequest, Routing, candidates, route_search
from rag_api.routing.target import Target, named, resolve

__all__ = [
    "Found",
    "RouteRequest",
    "RoutedOutcome",
    "Routing",
    "Target",
    "candidates",
    "named",
    "resolve",
    "route_search",
    "search_target",
]
