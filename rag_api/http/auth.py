"""Optional bearer-token auth: RAG_API_KEY guards reads and the OpenAI routes, RAG_ADMIN_API_KEY writes."""

from __future__ import annotations

import hmac

from fastapi import Request

from rag_api.errors import Forbidden, Unauthorized
from rag_api.http.deps import SettingsDep
from rag_api.settings import Settings


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _matches(token: str | None, *keys: str | None) -> bool:
    # compare against every configured key in constant time, without short-circuiting
    matched = False
    for key in keys:
        if key is not None and token is not None:
            matched |= hmac.compare_digest(token.encode(), key.encode())
    return matched


def is_reader(request: Request, settings: Settings) -> bool:
    """Whether the request may read: no key is set, or it carries RAG_API_KEY or RAG_ADMIN_API_KEY."""
    keys = (settings.api_key, settings.admin_api_key)
    return not any(keys) or _matches(bearer_token(request), *keys)


async def require_reader(request: Request, settings: SettingsDep) -> None:
    """Reads: open unless a key is set; then RAG_API_KEY or RAG_ADMIN_API_KEY."""
    if not is_reader(request, settings):
        raise Unauthorized("missing or invalid bearer token (Authorization: Bearer <key>)")


async def require_admin(request: Request, settings: SettingsDep) -> None:
    """Writes: open unless RAG_ADMIN_API_KEY is set; then only that key."""
    check_admin(request, settings)


def keys_set(settings: Settings) -> bool:
    """Whether any key guards this hub (else everything is open)."""
    return bool(settings.api_key or settings.admin_api_key)


def is_admin(request: Request, settings: Settings) -> bool:
    """Whether the request may write: RAG_ADMIN_API_KEY is unset, or it carries that key."""
    key = settings.admin_api_key
    return not key or _matches(bearer_token(request), key)


def check_admin(request: Request, settings: Settings) -> None:
    """require_admin for a route that needs the admin key only for some requests: a request
    without a known key is 401, the reader key is known but may not write: 403."""
    if is_admin(request, settings):
        return
    if _matches(bearer_token(request), settings.api_key):
        raise Forbidden("the reader key cannot change the knowledge base: use RAG_ADMIN_API_KEY")
    raise Unauthorized("this endpoint changes the knowledge base: it needs RAG_ADMIN_API_KEY")
