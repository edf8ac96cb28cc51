"""Bearer keys on every route, from one place: each route depends on `require_reader`,
`require_writer` or `require_admin`, which find the request's key in the app's Keyring, refuse it
or set the request's grant (rag_api.access.grant) that every collection lookup then checks.

`principal_of` declares the bearer scheme (`BEARER`) to OpenAPI, so every route that needs a key
references it and /docs has an Authorize button; the scheme refuses nothing itself
(`auto_error=False`): the refusals, and their bodies, are `authorize`'s."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rag_api.access.claims import TOKEN
from rag_api.access.grant import Grant, Op, Principal, current
from rag_api.errors import CollectionNotFound, Forbidden, Unauthorized
from rag_api.http.deps import KeyringDep

BEARER = HTTPBearer(
    scheme_name="bearer",
    description="RAG_API_KEY, RAG_ADMIN_API_KEY or a scoped key (`rag-hub keys create`); "
    "not needed when no key is set",
    auto_error=False,
)
DeclaredBearer = Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def principal_of(
    request: Request, keyring: KeyringDep, _declared: DeclaredBearer = None
) -> Principal | None:
    """Who the request's key is (None: no key, or one the hub does not know); a scoped key's
    first use (its slow hash) is checked in a worker thread. `_declared` only documents the
    scheme: the token is read by `bearer_token`, as the hot reads read it."""
    token = bearer_token(request)
    found = keyring.known(token)
    if found is not None or token is None:
        return found
    client = request.client.host if request.client else ""
    return await anyio.to_thread.run_sync(keyring.principal, token, client)


PrincipalDep = Annotated[Principal | None, Depends(principal_of)]


def authorize(request: Request, principal: Principal | None, op: Op, admin: bool = False) -> None:
    """Let the request's key do `op` (and operations, with `admin`), or refuse it; a collection in
    the path that the key may not see answers as an unknown one would. Sets the request's grant,
    which every collection lookup checks (rag_api.access.grant)."""
    if principal is None:
        if op == "read":
            raise Unauthorized("missing or invalid bearer token (Authorization: Bearer <key>)")
        raise Unauthorized(
            "this endpoint changes the knowledge base: it needs RAG_ADMIN_API_KEY or a key with "
            "a write scope (Authorization: Bearer <key>)"
        )
    if admin and not principal.admin:
        raise _refused(
            principal,
            "this key may not run operations: use RAG_ADMIN_API_KEY or an admin key",
            "rag:ops",
        )
    if op == "write" and not principal.write:
        raise _refused(
            principal,
            "this key cannot change the knowledge base: use RAG_ADMIN_API_KEY or a key with a "
            "write scope",
            "rag:write:*",
        )
    if not principal.reads_anything():
        raise _refused(principal, "this key may not read any collection", "rag:read:*")
    name = request.path_params.get("collection")
    if name is not None and name != _router(request) and not principal.may(op, name):
        if not principal.may("read", name):
            raise CollectionNotFound(name)
        raise _refused(
            principal, f"this key may read '{name}' but not change it", f"rag:write:{name}"
        )
    current.set(Grant(principal, op, route_of(request)))


def _refused(principal: Principal, message: str, scope: str) -> Forbidden:
    """A 403; for an access token, one that says the scope it lacks (`insufficient_scope`)."""
    if not principal.id.startswith(TOKEN):
        return Forbidden(message)
    refused = Forbidden(message.replace("this key", "this token") + f" (it needs {scope})")
    refused.scope = scope
    return refused


def route_of(request: Request) -> str | None:
    """The method and path template of the route serving `request` ("DELETE
    /v1/responses/{response_id}"), once routed."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    return f"{request.method} {path}" if path else None


def _router(request: Request) -> str | None:
    """The name of `auto` (not a collection: it searches only what the key may read)."""
    hub = request.app.state.hub
    return hub.config.router.name if hub is not None else None


async def require_reader(request: Request, principal: PrincipalDep) -> None:
    authorize(request, principal, "read")


async def require_writer(request: Request, principal: PrincipalDep) -> None:
    authorize(request, principal, "write")


async def require_admin(request: Request, principal: PrincipalDep) -> None:
    authorize(request, principal, "write", admin=True)
