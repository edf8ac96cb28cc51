"""/v1/rag/search and /v1/rag/context through `auto`: the same answers as for one collection,
each result naming its collection, plus the `routing` block (rag_api.routing)."""

from __future__ import annotations

import time
from typing import Any

from rag_api.catalog import Catalog
from rag_api.kbadmin.models import Context, Search
from rag_api.kbadmin.reads import context_body, search_body
from rag_api.routing import RoutedOutcome, RouteRequest, route_search


def _route(hub: Catalog, request: Search) -> RoutedOutcome:
    names = tuple(request.collections) if request.collections is not None else None
    return route_search(hub, RouteRequest(request.search_request(), names))


def search_results(hub: Catalog, request: Search) -> dict[str, Any]:
    """/search through auto."""
    routed = _route(hub, request)
    body = search_body(request, hub.config.router.name, routed.mode, routed.passages)
    return body | {"routing": routed.routing.as_dict()}


def context(hub: Catalog, request: Context) -> dict[str, Any]:
    """/context through auto: the header in the answer's language (rag_api.routing.route), or
    the one asked for; each entry names its source's collection."""
    started = time.perf_counter()
    routed = _route(hub, request)
    language = request.language or routed.language
    name = hub.config.router.name
    body = context_body(name, routed.mode, language, routed.passages, routed.timings_ms, started)
    return body | {"routing": routed.routing.as_dict()}
