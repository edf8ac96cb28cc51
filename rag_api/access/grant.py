"""A key's scopes, the grant of the request being served, and the check a collection lookup makes.

Nothing here knows HTTP: the app sets the grant of each request (rag_api.http.auth), and code that
runs outside a request (the watcher, the CLI in its own process) has none and is unrestricted.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

Op = Literal["read", "write"]
EVERY = "*"
audit_log = logging.getLogger("rag_api.audit")


@dataclass(frozen=True)
class Principal:
    """Who a key is, and what it may do: `read` / `write` name collections (or `*`: every one),
    `admin` the operations (migrate, check --repair, the indexer's status), `metrics` scrape
    /metrics (the series of collections it cannot read left out)."""

    id: str
    name: str
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: bool = False
    metrics: bool = False

    def may(self, op: Op, collection: str) -> bool:
        """A writer may also read what it writes."""
        writes = _names(collection, self.write)
        if op == "write":
            return writes
        return writes or _names(collection, self.read)

    def reads_anything(self) -> bool:
        return bool(self.read or self.write)


def _names(collection: str, scope: frozenset[str]) -> bool:
    """Whether `scope` names `collection`: itself, `*`, or a pattern (`team-*`: a token's)."""
    if EVERY in scope or collection in scope:
        return True
    return any(fnmatchcase(collection, name) for name in scope if "*" in name or "?" in name)


# when no key is configured at all: everything is open (the start line says so)
OPEN = Principal("open", "no key set", frozenset({EVERY}), frozenset({EVERY}), admin=True)


@dataclass(frozen=True)
class Grant:
    principal: Principal
    op: Op
    route: str | None = None  # what the request called ("POST /v1/ops/drop-old"), for the audit


current: ContextVar[Grant | None] = ContextVar("rag_grant", default=None)


def allowed(collection: str, op: Op | None = None) -> bool:
    """Whether the request being served may work on `collection` (its own op unless `op` says)."""
    grant = current.get()
    return grant is None or grant.principal.may(op or grant.op, collection)


def audit(action: str, where: str, **changed: Any) -> None:
    """One line for a write: who (key id and name, never the secret), through which route, what,
    where."""
    grant = current.get()
    who = f"{grant.principal.id} ({grant.principal.name})" if grant else "local"
    route = grant.route if grant else None
    details = " ".join(f"{key}={value}" for key, value in changed.items())
    audit_log.info(
        "%s%s %s on %s %s",
        who,
        f" {route}:" if route else "",
        action,
        where,
        details,
        extra={
            "key_id": grant.principal.id if grant else None,
            "action": action,
            "route": route,
            "collection": where,
        },
    )
