"""Where a request goes: the one rule from a request's collection field to a named collection or
to `auto`, for /query, /v1/rag/*, the OpenAI routes (after their model name) and the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_api.catalog import Catalog
from rag_api.errors import InvalidRequest
from rag_api.points.collection import Collection


@dataclass(frozen=True)
class Target:
    """A named collection, or (`collection` None) `auto` choosing among `candidates` (None: every
    collection routing is enabled for)."""

    collection: Collection | None
    candidates: tuple[str, ...] | None = None

    @property
    def routes(self) -> bool:
        return self.collection is None


def resolve(hub: Catalog, name: str | None, candidates: Sequence[str] | None = None) -> Target:
    """`name` is the router's (or absent while `candidates` are given): `auto`; else the named
    collection (absent: default_collection). `candidates` only with `auto`."""
    chosen = tuple(candidates) if candidates is not None else None
    if name == hub.config.router.name or (name is None and chosen is not None):
        return Target(None, chosen)
    if chosen is not None:
        raise InvalidRequest(
            f"collections: choose among collections with '{hub.config.router.name}', "
            f"not with the named collection '{name}'",
            param="collections",
        )
    return Target(hub.collection(name))


def named(in_body: str | None, in_query: str | None) -> str | None:
    """The collection a request names in its body or its query string (they must agree)."""
    if in_body and in_query and in_body != in_query:
        raise InvalidRequest(
            f"collection: the body says '{in_body}' but the query says '{in_query}'"
        )
    return in_body or in_query
