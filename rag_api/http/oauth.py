"""The hub as an OAuth 2.1 protected resource (with `access.oidc`): its metadata (RFC 9728) at
`/.well-known/oauth-protected-resource` and, for `/mcp`, at the same path followed by `/mcp`; and
the `WWW-Authenticate` challenge a 401 or an insufficient scope carries, naming that metadata, so
an MCP client (claude.ai's and ChatGPT's connectors, the MCP Inspector) finds the provider to ask
a token of. Without a provider nothing is published: a 404, and a plain `Bearer` challenge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rag_api.errors import NotFound, RagError
from rag_api.http.deps import OpenedDep

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP = "/mcp"
DEFAULT_SCOPES = ["rag:read:*", "rag:write:*", "rag:ops", "rag:metrics"]  # access.claims' own
router = APIRouter(include_in_schema=False)


@router.get(WELL_KNOWN)
@router.get(WELL_KNOWN + MCP)
def protected_resource(request: Request, hub: OpenedDep) -> JSONResponse:
    """What a client needs to get a token for this resource (404 without a provider)."""
    oidc = hub.keyring.oidc if hub is not None else None
    if oidc is None:
        raise NotFound("this hub takes no OAuth tokens (no access.oidc): use a key")
    resource = base(request, hub) + (MCP if request.url.path.endswith(MCP) else "")
    document: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": [oidc.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "RAG Hub",
        "resource_documentation": f"{base(request, hub)}/docs",
    }
    if not oidc.grants:
        document["scopes_supported"] = DEFAULT_SCOPES
    return JSONResponse(document, headers={"Cache-Control": "max-age=300"})


def challenge(request: Request, exc: RagError) -> str | None:
    """The `WWW-Authenticate` value of an error response: on a 401, and on a 403 of a token; None
    for the other errors."""
    hub = request.app.state.hub
    oidc = hub.keyring.oidc if hub is not None else None
    if exc.status == 401:
        if oidc is None:
            return "Bearer"
        parts = [f'resource_metadata="{metadata_url(request, hub)}"']
        if not oidc.grants:
            parts.append('scope="rag:read:*"')
        if exc.code == "INVALID_TOKEN":
            parts.append('error="invalid_token"')
        return "Bearer " + ", ".join(parts)
    if exc.status == 403 and oidc is not None and getattr(exc, "scope", None):
        return f'Bearer error="insufficient_scope", scope="{exc.scope}"'
    return None


def metadata_url(request: Request, hub: Any) -> str:
    """The metadata of the resource `request` asked for: `/mcp`'s own, else the hub's."""
    suffix = MCP if request.url.path.rstrip("/").endswith(MCP) else ""
    return f"{base(request, hub)}{WELL_KNOWN}{suffix}"


def base(request: Request, hub: Any) -> str:
    """Where people reach the hub: RAG_PUBLIC_URL, else the request's own base URL."""
    return (hub.settings.public_url or str(request.base_url)).rstrip("/")
