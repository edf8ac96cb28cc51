"""collections.yaml's `access:` block: the organisation's identity provider, whose access tokens
the hub accepts beside its own keys (OAuth 2.1 / OpenID Connect, docs/security.md), and how a
token's claims become the grants keys carry."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# asymmetric signatures only: never `none`, never HMAC (a public key is no secret)
Algorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]
ALGORITHMS: list[Algorithm] = list(Algorithm.__args__)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GrantRule(Strict):
    """A token whose `claim` holds `value` (a string claim equal to it, a list claim or a
    space-separated `scope` holding it) gets these grants; a token's grant is the union of every
    rule it matches. Collection names may be patterns (`team-*`)."""

    claim: Annotated[str, Field(min_length=1, max_length=200)]  # scope, groups, roles, or any
    value: Annotated[str, Field(min_length=1, max_length=500)]
    read: list[Annotated[str, Field(min_length=1)]] = []
    write: list[Annotated[str, Field(min_length=1)]] = []
    ops: bool = False  # operations: migrate, backup, check --repair, the indexer's status
    metrics: bool = False  # /metrics (the series of collections it cannot read left out)

    @model_validator(mode="after")
    def _grants_something(self) -> GrantRule:
        if not (self.read or self.write or self.ops or self.metrics):
            raise ValueError(f"the rule for {self.claim}={self.value} grants nothing")
        return self


class OidcConfig(Strict):
    """The identity provider: found through its discovery document, its keys from its JWKS."""

    issuer: Annotated[str, Field(min_length=1)]  # the `iss` tokens carry, and where discovery is
    # the `aud` a token must carry: the hub's resource URL (RAG_PUBLIC_URL, and its /mcp) unless
    # set; several are allowed
    audience: list[Annotated[str, Field(min_length=1)]] = []
    algorithms: Annotated[list[Algorithm], Field(min_length=1)] = ALGORITHMS
    leeway_s: Annotated[float, Field(ge=0, le=300)] = 30.0  # clock skew for exp / nbf / iat
    jwks_cache_s: Annotated[float, Field(gt=0, le=86_400)] = 3600.0  # a key kept this long
    # an unknown `kid` fetches the keys again, at most this often
    jwks_refresh_s: Annotated[float, Field(ge=0, le=3600)] = 30.0
    # claims to grants; none: the `scope` claim's rag:read:<c>, rag:write:<c>, rag:ops, rag:metrics
    grants: list[GrantRule] = []

    @field_validator("issuer")
    @classmethod
    def _an_url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError(f"issuer must be the provider's URL, not '{value}'")
        return value  # exactly as the provider writes it in `iss` (Auth0's ends with a /)

    @field_validator("audience", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class AccessConfig(Strict):
    oidc: OidcConfig | None = None
