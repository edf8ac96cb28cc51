"""Access tokens of a real OpenID provider (oidc-provider on loopback, tests/support/oidc_provider.py)
beside the hub's keys: a group's token reads its collection and not the other over HTTP, the
OpenAI routes and MCP; writes, operations and metrics need their grants; every bad token is a
clear 401 that writes nothing; the provider's key rotation and absence; the protected-resource
metadata an MCP client finds from the 401."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import openai
import pytest
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import ProtectedResourceMetadata

from tests.conftest import assert_error_shape, free_port, hash_collection, write_config
from tests.support.oidc_provider import SigningKey, tampered

KEY = "reader-global-key"
GRANTS = [  # a group per collection; operations and metrics by scope
    {"claim": "groups", "value": "support", "read": ["support"], "write": ["support"]},
    {"claim": "groups", "value": "sales", "read": ["sales"]},
    {"claim": "scope", "value": "rag:ops", "ops": True},
    {"claim": "scope", "value": "rag:metrics", "metrics": True},
]


async def listed_over_mcp(url: str, client: httpx2.AsyncClient) -> list[str]:
    """The collections MCP's list_collections names, asked at `url`/mcp through `client` (which
    carries the caller's credentials), closed after."""
    async with client, streamable_http_client(f"{url}/mcp", http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.call_tool("list_collections", {})
            return [c["name"] for c in json.loads(listed.content[0].text)["collections"]]


def world(tmp_path: Path, provider: Any, port: int, grants: list | None = GRANTS) -> Path:
    """Two collections, each with one passage, whose hub takes `provider`'s tokens."""
    collections = {}
    for name, text in (("support", "Refunds take 30 days."), ("sales", "Discounts need a code.")):
        kb = tmp_path / name
        kb.mkdir()
        (kb / "a.md").write_text(f"# {name}\n\n{text}\n")
        collections[name] = hash_collection(kb)
    oidc: dict[str, Any] = {
        "issuer": provider.issuer,
        "audience": ["urn:rag-hub", f"http://127.0.0.1:{port}/mcp"],
        "jwks_refresh_s": 0,  # the tests rotate keys: an unknown kid is looked up at once
    }
    if grants is not None:
        oidc["grants"] = grants
    return write_config(tmp_path / "c.yaml", collections, access={"oidc": oidc})


@pytest.fixture
def hub(tmp_path, oidc_provider, make_settings, serve) -> dict[str, Any]:
    port = free_port()
    settings = make_settings(world(tmp_path, oidc_provider, port), api_key=KEY, auth_failures=50)
    server = serve(settings, port=port)
    for name in ("support", "sales"):
        reload = httpx.post(
            f"{server.url}/v1/rag/reload",
            json={"collection": name},
            headers={"Authorization": f"Bearer {KEY}"},
        )
        assert reload.status_code == 200, reload.text
    return {"server": server, "url": server.url, "provider": oidc_provider}


def call(url: str, token: str, method: str = "GET", path: str = "/", **body: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.request(method, url + path, headers=headers, json=body or None, timeout=30)


def search(url: str, token: str, collection: str) -> httpx.Response:
    return call(
        url, token, "POST", "/v1/rag/search", query="refunds discounts", collection=collection
    )


def test_a_groups_token_reads_its_collection_and_not_the_other(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    support = provider.token("team-a", scope="rag:read:docs")  # groups: support
    sales = provider.token("team-b", scope="rag:read:docs")  # groups: sales
    assert search(url, support, "support").json()["results"][0]["text"].endswith("30 days.")
    assert_error_shape(search(url, support, "sales"), 404, "COLLECTION_NOT_FOUND")
    assert_error_shape(search(url, sales, "support"), 404, "COLLECTION_NOT_FOUND")
    listed = call(url, sales, path="/collections").json()["collections"]
    assert [c["name"] for c in listed] == ["sales"]

    client = openai.OpenAI(base_url=f"{url}/v1", api_key=support)  # the SDK sends it as a bearer
    assert [m.id for m in client.models.list()] == ["support"]
    reply = client.chat.completions.create(
        model="support", messages=[{"role": "user", "content": "refunds?"}]
    )
    assert "30 days" in reply.choices[0].message.content

    headers = {"Authorization": f"Bearer {sales}"}
    assert asyncio.run(listed_over_mcp(url, httpx2.AsyncClient(headers=headers, timeout=60))) == [
        "sales"
    ]
    assert search(url, KEY, "sales").status_code == 200  # the hub's own keys work beside tokens


def test_a_write_needs_the_write_grant_and_is_audited_with_the_tokens_subject(hub, caplog) -> None:
    url, provider = hub["url"], hub["provider"]
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    note = {"text": "A new policy.", "source": "crm/1"}
    refused = call(
        url, provider.token("team-b"), "POST", "/v1/rag/add/document", collection="sales", **note
    )
    error = assert_error_shape(refused, 403, "FORBIDDEN")  # sales' group reads, writes nothing
    assert "this token cannot change the knowledge base" in error["message"]
    assert refused.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", scope="rag:write:*"'
    )
    written = call(
        url, provider.token("team-a"), "POST", "/v1/rag/add/document", collection="support", **note
    )
    assert written.status_code == 200, written.text
    lines = [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"]
    assert any(
        line.startswith("token:team-a (team-a) POST /v1/rag/add/document:") for line in lines
    ), lines


def test_operations_and_metrics_need_their_grants(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    plain = provider.token("team-a", scope="rag:read:docs")  # groups: support, no rag:ops
    repair = {"collection": "support", "repair": True, "sample": 0}
    refused = call(url, plain, "POST", "/v1/ops/check", **repair)
    assert "rag:ops" in assert_error_shape(refused, 403, "FORBIDDEN")["message"]
    assert call(url, plain, path="/metrics").status_code == 403
    assert call(url, plain, path="/v1/ops/backups").status_code == 403
    ops = provider.token("team-a", scope="rag:ops rag:metrics")
    assert call(url, ops, "POST", "/v1/ops/check", **repair).json()["status"] == "healthy"
    assert call(url, ops, path="/v1/ops/backups").status_code == 200
    assert call(url, ops, path="/metrics").status_code == 200


def _hmac_with_the_public_key(provider: Any) -> str:
    public = provider.signing_key.jwk()
    secret = json.dumps(public).encode()
    body = base64.urlsafe_b64encode(json.dumps(provider.claims()).encode()).rstrip(b"=")
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    import hashlib
    import hmac

    signature = hmac.new(secret, header + b"." + body, hashlib.sha256).digest()
    return b".".join([header, body, base64.urlsafe_b64encode(signature).rstrip(b"=")]).decode()


def _alg_none(provider: Any) -> str:
    return jwt.encode(provider.claims(), key=None, algorithm="none")


REFUSED = {
    "expired": (lambda p, f: p.mint(exp=int(time.time()) - 600), "expired"),
    "not yet valid": (lambda p, f: p.mint(nbf=int(time.time()) + 600), "not valid yet"),
    "wrong issuer": (lambda p, f: p.mint(iss="http://127.0.0.1:9/elsewhere"), "not from"),
    "wrong audience": (lambda p, f: p.mint(aud="urn:another-app"), "another audience"),
    "alg none": (lambda p, f: _alg_none(p), "'none' is refused"),
    "hmac with the public key": (lambda p, f: _hmac_with_the_public_key(p), "'HS256' is refused"),
    "tampered": (lambda p, f: tampered(p.token("team-b"), groups=["support"]), "signature"),
    "unknown kid": (lambda p, f: p.mint(key=SigningKey.generate()), "no signing key"),
    "another provider's": (lambda p, f: f.token("team-a"), "no signing key"),
    "another provider's, named as ours": (lambda p, f: f.mint(iss=p.issuer), "no signing key"),
    "garbage": (
        lambda p, f: "eyJhbGciOiJSUzI1NiJ9.garbage.garbage",
        "not a token this hub can read",
    ),
}


def test_every_bad_token_is_a_clear_401_that_writes_nothing(
    hub, make_oidc_provider, caplog
) -> None:
    url, provider = hub["url"], hub["provider"]
    foreign = make_oidc_provider()
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    before = call(url, KEY, path="/v1/rag/status?collection=support").json()["chunks"]
    for name, (make, says) in REFUSED.items():
        caplog.clear()
        answer = call(url, make(provider, foreign), "POST", "/v1/rag/add/document",
                      collection="support", text="Forged.", source="x")  # fmt: skip
        assert answer.status_code == 401, (name, answer.text)
        error = assert_error_shape(answer, 401, "INVALID_TOKEN")
        assert says in error["message"], (name, error)
        assert 'error="invalid_token"' in answer.headers["www-authenticate"], name
        assert any("refused a token" in r.getMessage() for r in caplog.records), name
    assert call(url, KEY, path="/v1/rag/status?collection=support").json()["chunks"] == before
    not_a_token = call(url, "not-a-key-nor-a-token", path="/collections")
    assert_error_shape(not_a_token, 401, "UNAUTHORIZED")  # looked up as a key: unknown


def test_a_token_that_grants_nothing_is_a_403_naming_what_it_lacks(hub, make_oidc_provider) -> None:
    url, provider = hub["url"], hub["provider"]
    stranger = provider.mint("team-c", groups=["marketing"], scope="rag:read:docs")
    error = assert_error_shape(call(url, stranger, path="/collections"), 403, "FORBIDDEN")
    assert "grants nothing" in error["message"] and "groups=support" in error["message"]


def test_rotation_and_a_provider_that_goes_down(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    old = provider.token("team-a")
    assert search(url, old, "support").status_code == 200
    provider.rotate(keep_old=False)  # the old key is gone from the provider's JWKS
    new = provider.token("team-a")
    assert search(url, new, "support").status_code == 200  # its kid fetched the keys again
    assert search(url, old, "support").status_code == 200  # kept until its key's cache ends
    provider.stop()
    assert search(url, new, "support").status_code == 200  # verified before: still good
    unseen = provider.mint(key=SigningKey.generate())
    error = assert_error_shape(search(url, unseen, "support"), 401, "INVALID_TOKEN")
    assert "cannot be read now" in error["message"]
    assert search(url, KEY, "support").status_code == 200  # keys go on without the provider


def test_the_default_mapping_is_the_scope_claims(
    tmp_path, oidc_provider, make_settings, serve
) -> None:
    port = free_port()
    settings = make_settings(world(tmp_path, oidc_provider, port, grants=None), api_key=KEY)
    url = serve(settings, port=port).url
    bare = oidc_provider.token("team-b", scope="")  # a token with no scope at all
    error = assert_error_shape(call(url, bare, path="/collections"), 403, "FORBIDDEN")
    assert "rag:read:<collection>" in error["message"]
    everything = oidc_provider.token("team-b", scope="rag:read:*")
    names = [c["name"] for c in call(url, everything, path="/collections").json()["collections"]]
    assert names == ["support", "sales"]
    unauthorised = httpx.get(f"{url}/v1/collections/support/sources")
    assert 'scope="rag:read:*"' in unauthorised.headers["www-authenticate"]


def test_the_protected_resource_metadata_and_an_mcp_client_that_finds_it(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    unauthorised = httpx.post(f"{url}/mcp", json={})
    assert unauthorised.status_code == 401
    challenge = unauthorised.headers["www-authenticate"]
    assert (
        challenge.startswith("Bearer ")
        and f'resource_metadata="{url}/.well-known/oauth-protected-resource/mcp"' in challenge
    )
    document = httpx.get(f"{url}/.well-known/oauth-protected-resource/mcp").json()
    metadata = ProtectedResourceMetadata.model_validate(document)  # RFC 9728's fields
    assert str(metadata.resource).rstrip("/") == f"{url}/mcp"
    assert [str(a).rstrip("/") for a in metadata.authorization_servers] == [provider.issuer]

    auth = ClientCredentialsOAuthProvider(
        server_url=f"{url}/mcp",
        storage=_Memory(),
        client_id="team-a",
        client_secret="team-a-secret",
        scope="rag:read:docs",
        issuer=provider.issuer,
    )
    listed = asyncio.run(listed_over_mcp(url, httpx2.AsyncClient(auth=auth, timeout=60)))
    assert listed == ["support"]  # the 401, the metadata, a token, the tools


def test_without_a_provider_nothing_is_published(tmp_path, make_settings, serve) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(None)})
    url = serve(make_settings(config, api_key=KEY)).url
    assert httpx.get(f"{url}/.well-known/oauth-protected-resource").status_code == 404
    assert httpx.post(f"{url}/mcp", json={}).headers["www-authenticate"] == "Bearer"


class _Memory:
    """The MCP SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


def test_a_users_token_from_the_authorization_code_grant_with_pkce(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    alice = provider.user_token("alice", scope="rag:read:docs")["access_token"]  # groups: support
    assert search(url, alice, "support").status_code == 200
    assert_error_shape(search(url, alice, "sales"), 404, "COLLECTION_NOT_FOUND")


def test_bad_tokens_count_toward_the_failed_credential_limit(
    tmp_path, oidc_provider, make_settings, serve
) -> None:
    port = free_port()
    settings = make_settings(world(tmp_path, oidc_provider, port), api_key=KEY, auth_failures=3)
    url = serve(settings, port=port).url
    expired = oidc_provider.mint(exp=int(time.time()) - 600)
    statuses = [call(url, expired, path="/collections").status_code for _ in range(5)]
    assert statuses[:3] == [401, 401, 401] and statuses[3:] == [429, 429]
    good = oidc_provider.token("team-a")  # this client is held for the rest of the minute
    assert_error_shape(call(url, good, path="/collections"), 429, "TOO_MANY_FAILED_ATTEMPTS")


def test_a_tokens_grant_is_the_union_of_every_rule_it_matches(hub) -> None:
    url, provider = hub["url"], hub["provider"]
    both = provider.mint(groups=["support", "sales"], scope="rag:metrics")
    assert search(url, both, "support").status_code == 200
    assert search(url, both, "sales").status_code == 200
    assert call(url, both, path="/metrics").status_code == 200
