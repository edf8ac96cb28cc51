"""A query: its validated request (HTTP body and CLI alike) and its execution: retrieve, then answer."""

from __future__ import annotations

import time
from typing import Any

from rag_api.answering.answer import answer
from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.catalog import Catalog
from rag_api.observability.metrics import observe_stages
from rag_api.routing import Found, resolve, search_target


def find(hub: Catalog, collection: str, body: QueryBody) -> Found:
    """The passages for `body` from `collection`, or from where `auto` routes it."""
    return search_target(hub, resolve(hub, collection, body.collections), body.search_request())


def run_query(hub: Catalog, collection: str, body: QueryBody) -> QueryAnswer:
    """Answer a question from one collection (or the ones `auto` routes it to), with the
    passages it is grounded in."""
    started = time.perf_counter()
    found = find(hub, collection, body)
    kb, passages, timings, warning = (
        found.answering,
        found.passages,
        found.timings_ms,
        found.warning,
    )
    response: dict[str, Any] = found.head()
    if body.generate:
        generation_started = time.perf_counter()
        result = answer(hub.generators, kb, body.query, passages, language=found.routed_language)
        response["answer"] = result.text()
        timings["generate"] = round((time.perf_counter() - generation_started) * 1000, 3)
        observe_stages(kb.name, {"generate": timings["generate"]})
        passages = result.passages
        response |= {
            "generator": result.generator,
            "model": result.model,
            "usage": result.usage.as_dict(),
        }
        warning = result.warning or warning
    else:
        response |= {"answer": None, "generator": None, "model": None, "usage": None}
    response["sources"] = [p.as_dict() for p in passages]
    if warning:
        response["warning"] = warning
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    response["timings_ms"] = timings
    return QueryAnswer(**response)
