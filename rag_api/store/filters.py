"""A Selector as an engine's filter: its conditions are translated here, once; each engine only
names its own constructors (a FilterTypes) for the roles a condition plays."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_api.store.types import Condition, Selector


@dataclass(frozen=True)
class FilterTypes:
    """An engine's filter constructors, by role: a Selector's conditions are translated once, here
    (engine_filter), into whichever engine's types."""

    filter: Callable[..., Any]  # (must=[...], must_not=[...] | None)
    field: Callable[..., Any]  # (key=..., match=... or range=...)
    any: Callable[[Any], Any]  # a match of any of these values
    prefix: Callable[[str], Any]
    ids: Callable[[Any], Any]
    equals: Callable[[Any], Any]
    range: Callable[..., Any]  # (gte=..., lte=..., lt=...)
    has_vector: Callable[[str], Any]


def engine_filter(selector: Selector, types: FilterTypes) -> Any | None:
    """A selector as the engine's filter (must, must_not); None = no filter."""
    if selector.is_everything:
        return None
    must: list[Any] = []
    must_not: list[Any] = []
    for clause in selector.conditions():
        (must_not if clause.negated else must).append(_condition(clause, types))
    return types.filter(must=must, must_not=must_not or None)


def _condition(clause: Condition, types: FilterTypes) -> Any:
    key, value = clause.key, clause.value
    if clause.kind == "any":
        return types.field(key=key, match=types.any(value))
    if clause.kind == "prefix":
        return types.field(key=key, match=types.prefix(value))
    if clause.kind == "equals":
        return types.field(key=key, match=types.equals(value))
    if clause.kind == "range":
        bounds = {"gte": clause.gte, "lte": clause.lte, "lt": clause.lt}
        given = {name: bound for name, bound in bounds.items() if bound is not None}
        return types.field(key=key, range=types.range(**given))
    if clause.kind == "ids":
        return types.ids(value)
    return types.has_vector(key)
