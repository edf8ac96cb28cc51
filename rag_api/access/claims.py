"""A token's claims as the grants the hub's keys carry (rag_api.access.grant.Principal): each rule
of `access.oidc.grants` whose claim holds its value adds its grants; with no rules, the `scope`
claim's `rag:read:<collection>`, `rag:write:<collection>` (`*` or a pattern for several),
`rag:ops` and `rag:metrics`. A token that matches nothing is refused, naming what it lacks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rag_api.access.grant import Principal
from rag_api.config.access import GrantRule, OidcConfig
from rag_api.errors import Forbidden

READ, WRITE, OPS, METRICS = "rag:read:", "rag:write:", "rag:ops", "rag:metrics"
TOKEN = "token:"  # a token's principal's id: token:<subject>


def principal_of(claims: dict[str, Any], cfg: OidcConfig) -> Principal:
    """Who the token is and what it may do; Forbidden when its claims grant nothing here."""
    read: set[str] = set()
    write: set[str] = set()
    ops = metrics = False
    if cfg.grants:
        for rule in cfg.grants:
            if _holds(claims.get(rule.claim), rule):
                read |= set(rule.read)
                write |= set(rule.write)
                ops, metrics = ops or rule.ops, metrics or rule.metrics
    else:
        for scope in _values(claims.get("scope") or claims.get("scp")):
            if scope.startswith(READ):
                read.add(scope.removeprefix(READ))
            elif scope.startswith(WRITE):
                write.add(scope.removeprefix(WRITE))
            ops, metrics = ops or scope == OPS, metrics or scope == METRICS
    read.discard("")
    write.discard("")
    subject = str(claims.get("sub") or "?")
    client = claims.get("client_id") or claims.get("azp")
    if not (read or write or ops or metrics):
        raise Forbidden(
            f"the token of {_who(subject, client)} grants nothing on this hub: {_lacks(cfg)}"
        )
    return Principal(
        id=f"{TOKEN}{subject}",
        name=_who(subject, client),
        read=frozenset(read),
        write=frozenset(write),
        admin=ops,
        metrics=metrics,
    )


def _holds(value: Any, rule: GrantRule) -> bool:
    return rule.value in _values(value)


def _values(value: Any) -> Iterable[str]:
    """A claim's values: a list's items, a string's space-separated words (`scope`)."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return ()


def _who(subject: str, client: Any) -> str:
    return f"{subject} (client {client})" if client and client != subject else subject


def _lacks(cfg: OidcConfig) -> str:
    if not cfg.grants:
        return (
            "its scope claim holds none of rag:read:<collection>, rag:write:<collection>, "
            "rag:ops, rag:metrics"
        )
    rules = ", ".join(f"{rule.claim}={rule.value}" for rule in cfg.grants)
    return f"its claims match none of access.oidc.grants ({rules})"
