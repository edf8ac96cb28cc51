"""Routing by the question: the `auto` collection (name set by `router.name` in collections.yaml)
searches the collection(s) a question belongs to. The rule: rag_api.routing.decide; probes:
.probe; signals (keywords, entities, language): .signals; search and fusion: .route."""

from rag_api.routing.route import RoutedOutcome, RouteRequest, Routing, is_router, route_search

__all__ = ["RouteRequest", "RoutedOutcome", "Routing", "is_router", "route_search"]
