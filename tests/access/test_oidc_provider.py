"""The OpenID provider harness itself (tests/support/oidc_provider.py): a real oidc-provider
answers discovery, issues client_credentials tokens as JWTs signed by its JWKS key with the
configured scope, groups, audience and issuer, rotates its keys, stops, and runs beside a second
issuer; tokens it never issued are crafted with its keys."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from tests.support.oidc_provider import (
    ALL_SCOPES,
    Client,
    OidcProvider,
    SigningKey,
    tampered,
    unverified_claims,
)


def verify(provider: OidcProvider, token: str, audience: str) -> dict:
    """Verify as a resource server would: the key by kid from the provider's jwks_uri."""
    signing_key = jwt.PyJWKClient(provider.jwks_uri, cache_keys=False).get_signing_key_from_jwt(
        token
    )
    return jwt.decode(
        token,
        signing_key.key,
        algorithms=["RS256"],
        audience=audience,
        issuer=provider.issuer,
        options={"require": ["exp", "iat", "iss", "aud", "sub"]},
    )


def test_discovery_and_a_client_credentials_jwt(oidc_provider: OidcProvider) -> None:
    discovery = httpx.get(oidc_provider.discovery_url).json()
    assert discovery["issuer"] == oidc_provider.issuer
    assert discovery["jwks_uri"] == oidc_provider.jwks_uri
    assert "client_credentials" in discovery["grant_types_supported"]
    served = httpx.get(discovery["jwks_uri"]).json()
    assert served == oidc_provider.jwks()
    assert all("d" not in key for key in served["keys"])  # only public halves are served

    token = oidc_provider.token("team-a", scope="rag:read:docs rag:ops")
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": oidc_provider.signing_key.kid}
    claims = verify(oidc_provider, token, audience="urn:rag-hub")
    assert claims["scope"] == "rag:read:docs rag:ops"
    assert claims["groups"] == ["support"]
    assert claims["sub"] == claims["client_id"] == "team-a"
    assert claims["exp"] - claims["iat"] == oidc_provider.access_token_ttl

    other = verify(oidc_provider, oidc_provider.token("team-b", scope="rag:read:*"), "urn:rag-hub")
    assert (other["client_id"], other["groups"], other["scope"]) == (
        "team-b",
        ["sales"],
        "rag:read:*",
    )


def test_resource_audience_and_refused_requests(oidc_provider: OidcProvider) -> None:
    mcp = "http://127.0.0.1:8000/mcp"
    claims = verify(oidc_provider, oidc_provider.token("team-a", "rag:metrics", mcp), mcp)
    assert claims["aud"] == mcp and claims["scope"] == "rag:metrics"

    refused = oidc_provider.token_response("team-b", scope="rag:read:docs rag:ops")
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_scope")
    wrong = oidc_provider.token_response("team-a", secret="not-the-secret")
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")
    not_uri = oidc_provider.token_response("team-a", resource="rag-hub")
    assert (not_uri.status_code, not_uri.json()["error"]) == (400, "invalid_target")


def test_configured_clients_audiences_and_a_second_issuer(make_oidc_provider) -> None:
    first = make_oidc_provider(
        clients=[Client("ops", "ops-secret", ("rag:ops",), ("oncall", "sre"))],
        audiences={"urn:rag-hub": "rag-hub"},
    )
    foreign = make_oidc_provider()
    assert first.issuer != foreign.issuer and first.running and foreign.running
    claims = verify(first, first.token("ops"), audience="rag-hub")
    assert (claims["scope"], claims["groups"]) == ("rag:ops", ["oncall", "sre"])

    from_foreign = foreign.token("team-a")
    assert unverified_claims(from_foreign)["scope"] == " ".join(ALL_SCOPES)
    with pytest.raises(jwt.PyJWKClientError):  # the foreign kid is not in the first's JWKS
        verify(first, from_foreign, audience="urn:rag-hub")


def test_rotation_changes_the_kid(oidc_provider: OidcProvider) -> None:
    old = oidc_provider.signing_key
    before = oidc_provider.token()
    issuer, port = oidc_provider.issuer, oidc_provider.port

    new = oidc_provider.rotate(keep_old=True)
    assert (oidc_provider.issuer, oidc_provider.port) == (issuer, port)
    after = oidc_provider.token()
    assert jwt.get_unverified_header(after)["kid"] == new.kid != old.kid
    served = [key["kid"] for key in httpx.get(oidc_provider.jwks_uri).json()["keys"]]
    assert served == [new.kid, old.kid]
    verify(oidc_provider, before, "urn:rag-hub")  # the old key still verifies its tokens

    newest = oidc_provider.rotate(keep_old=False)
    served = [key["kid"] for key in httpx.get(oidc_provider.jwks_uri).json()["keys"]]
    assert served == [newest.kid] and old in oidc_provider.retired
    with pytest.raises(jwt.PyJWKClientError):
        verify(oidc_provider, before, "urn:rag-hub")


def test_stop_makes_discovery_unreachable_and_start_brings_it_back(
    oidc_provider: OidcProvider,
) -> None:
    oidc_provider.stop()
    assert not oidc_provider.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(oidc_provider.discovery_url)
    oidc_provider.start()
    assert httpx.get(oidc_provider.discovery_url).json()["issuer"] == oidc_provider.issuer


def test_crafted_tokens(oidc_provider: OidcProvider) -> None:
    now = int(time.time())
    assert verify(oidc_provider, oidc_provider.mint(), "urn:rag-hub")["groups"] == ["support"]
    with pytest.raises(jwt.ExpiredSignatureError):
        verify(oidc_provider, oidc_provider.mint(exp=now - 60, iat=now - 660), "urn:rag-hub")
    with pytest.raises(jwt.ImmatureSignatureError):
        verify(oidc_provider, oidc_provider.mint(nbf=now + 600), "urn:rag-hub")
    with pytest.raises(jwt.InvalidAudienceError):
        verify(oidc_provider, oidc_provider.mint(aud="http://elsewhere/mcp"), "urn:rag-hub")
    with pytest.raises(jwt.MissingRequiredClaimError):
        verify(oidc_provider, oidc_provider.mint(exp=None), "urn:rag-hub")
    issued = oidc_provider.token("team-b", scope="rag:read:docs")
    with pytest.raises(jwt.InvalidSignatureError):
        verify(oidc_provider, tampered(issued, scope="rag:ops"), "urn:rag-hub")
    stranger = SigningKey.generate(kid=oidc_provider.signing_key.kid)  # the kid, not the key
    with pytest.raises(jwt.InvalidSignatureError):
        verify(oidc_provider, oidc_provider.mint(key=stranger), "urn:rag-hub")
    with pytest.raises(jwt.PyJWKClientError):
        verify(oidc_provider, oidc_provider.mint(headers={"kid": "unknown"}), "urn:rag-hub")


def test_authorization_code_with_pkce_without_a_browser(oidc_provider: OidcProvider) -> None:
    mcp = "http://127.0.0.1:8000/mcp"
    answer = oidc_provider.user_token("bob", scope="rag:read:docs", resource=mcp)
    claims = verify(oidc_provider, answer["access_token"], mcp)
    assert (claims["sub"], claims["client_id"]) == ("bob", "rag-cli")
    assert (claims["scope"], claims["groups"]) == ("rag:read:docs", ["sales"])
    id_token = jwt.decode(answer["id_token"], options={"verify_signature": False})
    assert (id_token["sub"], id_token["aud"]) == ("bob", "rag-cli")
