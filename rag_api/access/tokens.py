"""Access tokens of the organisation's identity provider (OAuth 2.1 / OpenID Connect), checked as a
resource server does: the provider found through its discovery document, its signing keys from
its JWKS (kept `jwks_cache_s`, fetched again for an unknown `kid` at most every
`jwks_refresh_s`), the signature checked by PyJWT with an algorithm of the allow-list (never
`none`, never HMAC: a public key is no secret), then `iss`, `aud` and `exp` / `nbf` within the
clock skew. Which grants a token's claims give is rag_api.access.claims."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from rag_api.config.access import AccessConfig, OidcConfig
from rag_api.errors import ConfigError, Unauthorized
from rag_api.settings import Settings

DISCOVERY = "/.well-known/openid-configuration"
FETCH_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


class TokenRefused(Unauthorized):
    """A token the hub does not accept, and why (never a secret: the reason only)."""

    code = "INVALID_TOKEN"


def looks_like_jwt(token: str) -> bool:
    """Three base64url parts, the first a JSON header naming an algorithm: a token to check as a
    token; anything else is looked up as one of the hub's own keys."""
    if token.count(".") != 2:
        return False
    head = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(header, dict) and "alg" in header


@dataclass
class _Key:
    jwk: jwt.PyJWK
    until: float  # kept until then, even if the provider stops listing it (old tokens)


class Tokens:
    """Checks tokens of one provider; thread-safe. `fetch(url) -> JSON` is how its documents are
    read (httpx by default)."""

    def __init__(
        self,
        cfg: OidcConfig,
        fetch: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self._fetch = fetch or _get_json
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, _Key] = {}
        self._jwks_uri: str | None = None
        self._fetched = -float("inf")  # when the keys were last fetched

    def claims(self, token: str) -> dict[str, Any]:
        """The token's claims once its signature, issuer, audience and times hold; TokenRefused
        naming what does not."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"not a token this hub can read ({exc})") from None
        algorithm = header.get("alg")
        if algorithm not in self.cfg.algorithms:
            allowed = ", ".join(self.cfg.algorithms)
            raise TokenRefused(f"a token signed with {algorithm!r} is refused (allowed: {allowed})")
        key = self._key(header.get("kid"))
        try:
            return jwt.decode(
                token,
                key.key,  # the public key itself: the algorithm is the allow-listed header's
                algorithms=[algorithm],
                audience=self.cfg.audience,
                issuer=self.cfg.issuer,
                leeway=self.cfg.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet (nbf or iat in the future)") from None
        except jwt.InvalidAudienceError:
            wanted = ", ".join(self.cfg.audience)
            raise TokenRefused(
                f"the token is for another audience (this hub is {wanted})"
            ) from None
        except jwt.InvalidIssuerError:
            raise TokenRefused(f"the token is not from {self.cfg.issuer}") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature does not hold") from None
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"the token is refused ({exc})") from None

    def _key(self, kid: str | None) -> jwt.PyJWK:
        """The provider's signing key `kid`: kept, else fetched (an unknown one at most every
        jwks_refresh_s); TokenRefused when the provider does not have it."""
        now = self._clock()
        with self._lock:
            self._drop_expired(now)
            found = self._pick(kid)
            due = now - self._fetched >= self.cfg.jwks_refresh_s
        if found is not None:
            return found
        if due:
            self._refresh(now)
            with self._lock:
                found = self._pick(kid)
            if found is not None:
                return found
        raise TokenRefused(f"no signing key {kid!r} at {self.cfg.issuer} (not one of its keys)")

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            key = self._keys.get(kid)
            return key.jwk if key is not None else None
        # no kid: only a provider with one key can say which
        return next(iter(self._keys.values())).jwk if len(self._keys) == 1 else None

    def _drop_expired(self, now: float) -> None:
        for kid in [k for k, key in self._keys.items() if key.until < now]:
            del self._keys[kid]

    def _refresh(self, now: float) -> None:
        """Fetch the provider's keys (and, first, where they are); a provider that cannot be
        reached keeps the keys kept: tokens already accepted go on until those expire."""
        with self._lock:
            self._fetched = now
        try:
            if self._jwks_uri is None:
                discovery = self._fetch(self.cfg.issuer.rstrip("/") + DISCOVERY)
                if discovery.get("issuer") != self.cfg.issuer:
                    raise TokenRefused(
                        f"{self.cfg.issuer}{DISCOVERY} names another issuer "
                        f"({discovery.get('issuer')!r}): is `issuer` spelled as the provider says?"
                    )
                self._jwks_uri = str(discovery["jwks_uri"])
            document = self._fetch(self._jwks_uri)
            found = jwt.PyJWKSet.from_dict(document).keys
        except TokenRefused:
            raise
        except (httpx.HTTPError, ValueError, KeyError, TypeError, jwt.PyJWTError) as exc:
            raise TokenRefused(
                f"the identity provider's keys cannot be read now ({_short(exc)})"
            ) from None
        until = now + self.cfg.jwks_cache_s
        with self._lock:
            for jwk in found:
                if jwk.key_id is not None and jwk.public_key_use in (None, "sig"):
                    self._keys[jwk.key_id] = _Key(jwk, until)


def oidc_of(settings: Settings, access: AccessConfig) -> OidcConfig | None:
    """The identity provider the hub accepts tokens of: collections.yaml's access.oidc, its issuer
    and audience set (or overridden) by RAG_OIDC_ISSUER and RAG_OIDC_AUDIENCE; the audience is
    the hub's resource URL (RAG_PUBLIC_URL, and its /mcp) unless set. None: no provider."""
    cfg = access.oidc
    if settings.oidc_issuer:
        cfg = (cfg or OidcConfig(issuer=settings.oidc_issuer)).model_copy(
            update={"issuer": OidcConfig(issuer=settings.oidc_issuer).issuer}
        )
    if cfg is None:
        return None
    audience = [settings.oidc_audience] if settings.oidc_audience else list(cfg.audience)
    if not audience and settings.public_url:
        public = settings.public_url.rstrip("/")
        audience = [public, f"{public}/mcp"]
    if not audience:
        raise ConfigError(
            "access.oidc needs the audience its tokens carry: set access.oidc.audience (or "
            "RAG_OIDC_AUDIENCE), or RAG_PUBLIC_URL, the hub's resource URL"
        )
    return cfg.model_copy(update={"audience": audience})


def _get_json(url: str) -> Any:
    response = httpx.get(url, timeout=FETCH_TIMEOUT, follow_redirects=True)
    response.raise_for_status()
    return json.loads(response.content)


def _short(exc: Exception) -> str:
    return " ".join((str(exc) or type(exc).__name__).split())[:200]
