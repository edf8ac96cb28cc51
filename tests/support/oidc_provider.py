"""A real OpenID provider for the tests: panva's oidc-provider (Node) on a loopback port.

tests/support/oidc/ holds its package.json, package-lock.json and provider.mjs. The packages are
installed once per machine (`npm ci`) into a cache folder keyed by the lock file
($RAG_TEST_OIDC_CACHE, else <tmp>/rag-hub-test-oidc); a second run, or a second worker, finds
them there. Without node or npm the fixtures skip, saying why.

    def test_x(oidc_provider):            # team-a, team-b (client_credentials), rag-cli + alice
        token = oidc_provider.token("team-a", scope="rag:read:docs", resource=f"{hub}/mcp")
        oidc_provider.rotate(keep_old=True)  # a new signing key first, the old one still served
        oidc_provider.stop()                 # discovery and JWKS unreachable; start() again
        forged = oidc_provider.mint(exp=int(time.time()) - 60)  # a token it never issued

`make_oidc_provider(**options)` starts more (a second, foreign issuer; other clients, scopes,
groups, audiences); `oidc_runtime` is the installed packages (session scope), for a provider
of a wider scope: `with OidcProvider(oidc_runtime, folder) as provider: ...`.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.conftest import free_port

OIDC_DIR = Path(__file__).resolve().parent / "oidc"
PACKAGE_FILES = ("package.json", "package-lock.json")
SCRIPT = OIDC_DIR / "provider.mjs"
# oidc-provider 9 calls URL.parse (Node 20.18+); it warns below Node 22, and runs
NODE_FLOOR = (20, 18)
ALL_SCOPES = ("rag:read:docs", "rag:write:docs", "rag:read:*", "rag:ops", "rag:metrics")
DEFAULT_RESOURCE = "urn:rag-hub"  # a resource indicator must be an absolute URI (RFC 8707)


class OidcUnavailable(Exception):
    """Node or npm is missing: the provider cannot run here (the fixtures skip with this)."""


@dataclass(frozen=True)
class Client:
    """A confidential client of the client_credentials grant."""

    client_id: str
    secret: str
    scopes: tuple[str, ...] = ALL_SCOPES
    groups: tuple[str, ...] = ()
    auth_method: str = "client_secret_basic"  # or client_secret_post

    def config(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_secret": self.secret,
            "scopes": list(self.scopes),
            "groups": list(self.groups),
            "token_endpoint_auth_method": self.auth_method,
        }


@dataclass(frozen=True)
class PublicClient:
    """A public client of the authorization code grant with PKCE (an MCP client, a CLI)."""

    client_id: str
    redirect_uri: str = "http://127.0.0.1:9/callback"  # never followed: the code is read off it
    scopes: tuple[str, ...] = ALL_SCOPES

    def config(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "redirect_uris": [self.redirect_uri],
            "scopes": list(self.scopes),
        }


@dataclass(frozen=True)
class User:
    """An end user the authorization code grant logs in without a page."""

    name: str
    groups: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)


DEFAULT_CLIENTS = (
    Client("team-a", "team-a-secret", ALL_SCOPES, ("support",)),
    Client(
        "team-b", "team-b-secret", ("rag:read:docs", "rag:write:docs", "rag:read:*"), ("sales",)
    ),
)
DEFAULT_PUBLIC_CLIENTS = (PublicClient("rag-cli"),)
DEFAULT_USERS = (User("alice", ("support",)), User("bob", ("sales",)))


@dataclass(frozen=True)
class SigningKey:
    """An RS256 key with its kid: the provider signs with the first of its keys."""

    kid: str
    private_key: rsa.RSAPrivateKey

    @classmethod
    def generate(cls, kid: str | None = None) -> SigningKey:
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(kid or f"key-{secrets.token_hex(6)}", private_key)

    def jwk(self, private: bool = False) -> dict[str, Any]:
        key = self.private_key if private else self.private_key.public_key()
        jwk = RSAAlgorithm.to_jwk(key, as_dict=True)
        jwk.pop("key_ops", None)  # PyJWT's "sign" would be served as the public key's
        return {**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}

    def sign(self, claims: Mapping[str, Any], headers: Mapping[str, Any] | None = None) -> str:
        """A JWT of `claims` signed with this key (kid and typ at+jwt, as the provider's)."""
        header = {"kid": self.kid, "typ": "at+jwt", **(headers or {})}
        return jwt.encode(dict(claims), self.private_key, algorithm="RS256", headers=header)


def tampered(token: str, **changes: Any) -> str:
    """`token` with claims changed (None drops one) and its signature kept: a forgery."""
    header, payload, signature = token.split(".")
    claims = json.loads(_unb64(payload))
    claims.update(changes)
    claims = {name: value for name, value in claims.items() if value is not None}
    return ".".join([header, _b64(json.dumps(claims).encode()), signature])


def unverified_claims(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---------------------------------------------------------------------------------------------
# the packages, once per machine


@dataclass(frozen=True)
class NodeRuntime:
    """node and the installed packages (OIDC_NODE_MODULES of provider.mjs)."""

    node: str
    modules: Path


def cache_root() -> Path:
    configured = os.environ.get("RAG_TEST_OIDC_CACHE")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "rag-hub-test-oidc"


def lock_digest() -> str:
    digest = hashlib.sha256()
    for name in PACKAGE_FILES:
        digest.update((OIDC_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def install(root: Path | None = None) -> NodeRuntime:
    """The packages of package-lock.json under root/<its hash>, installed by `npm ci` unless a
    run before did it (a file lock keeps parallel workers to one install). OidcUnavailable
    without node 20.18+ or (when not installed yet) npm; RuntimeError when npm fails."""
    node = shutil.which("node")
    if node is None:
        raise OidcUnavailable(
            "no node executable (Node.js 20.18+ and npm): OpenID provider tests skipped"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    found = tuple(int(part) for part in re.findall(r"\d+", version.stdout)[:2])
    if found < NODE_FLOOR:
        floor = ".".join(map(str, NODE_FLOOR))
        raise OidcUnavailable(
            f"node {version.stdout.strip()} is older than {floor}: OpenID provider tests skipped"
        )
    root = root or cache_root()
    target = root / lock_digest()
    done = target / ".installed"
    if not done.exists():
        root.mkdir(parents=True, exist_ok=True)
        with (root / f"{target.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                _npm_ci(target)
    return NodeRuntime(node, target / "node_modules")


def _npm_ci(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise OidcUnavailable(
            "no npm executable (Node.js 20.18+ and npm): OpenID provider tests skipped"
        )
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in PACKAGE_FILES:
        shutil.copyfile(OIDC_DIR / name, target / name)
    started = time.monotonic()
    command = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline"]
    result = subprocess.run(
        [*command, "--loglevel=error"],
        cwd=target,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(command)}` in {target} failed ({result.returncode}):\n"
            f"{(result.stdout + result.stderr)[-3000:]}"
        )
    (target / ".installed").write_text(f"npm ci: {time.monotonic() - started:.1f} s\n")


# ---------------------------------------------------------------------------------------------
# a provider


class OidcProvider:
    """oidc-provider in a child process on 127.0.0.1:<port>, issuer http://127.0.0.1:<port>;
    a context manager (started on entry, stopped on exit). The port and issuer stay the same
    across stop()/start() and rotate()."""

    def __init__(
        self,
        runtime: NodeRuntime,
        folder: Path,
        *,
        clients: Iterable[Client] = DEFAULT_CLIENTS,
        public_clients: Iterable[PublicClient] = DEFAULT_PUBLIC_CLIENTS,
        users: Iterable[User] = DEFAULT_USERS,
        default_resource: str = DEFAULT_RESOURCE,
        audiences: Mapping[str, str] | None = None,
        access_token_ttl: int = 600,
        keys: Iterable[SigningKey] | None = None,
        port: int | None = None,
    ) -> None:
        self.runtime = runtime
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.clients = {client.client_id: client for client in clients}
        self.public_clients = {client.client_id: client for client in public_clients}
        self.users = {user.name: user for user in users}
        self.default_resource = default_resource
        self.audiences = dict(audiences or {})
        self.access_token_ttl = access_token_ttl
        self.keys: list[SigningKey] = list(keys) if keys is not None else [SigningKey.generate()]
        self.retired: list[SigningKey] = []  # keys rotate(keep_old=False) dropped
        self.port = port or free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.discovery_url = f"{self.issuer}/.well-known/openid-configuration"
        self.jwks_uri = f"{self.issuer}/jwks"
        self.token_endpoint = f"{self.issuer}/token"
        self.log = folder / "provider.log"
        self._process: subprocess.Popen | None = None

    # -- the process

    def start(self, timeout: float = 60) -> OidcProvider:
        """Start (a no-op when running) and wait until the discovery document answers."""
        if self.running:
            return self
        config = self._write_config()
        env = {**os.environ, "OIDC_NODE_MODULES": str(self.runtime.modules)}
        with self.log.open("a") as log:
            self._process = subprocess.Popen(
                [self.runtime.node, str(SCRIPT), str(config), str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.folder,
            )
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"oidc-provider did not start:\n{self.log_tail()}")
            time.sleep(0.05)
        discovery = httpx.get(self.discovery_url, timeout=5).json()
        assert discovery["issuer"] == self.issuer and discovery["jwks_uri"] == self.jwks_uri
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> OidcProvider:
        self.stop()
        return self.start()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> OidcProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def _answers(self) -> bool:
        try:
            return httpx.get(self.discovery_url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def _write_config(self) -> Path:
        jwks = self.folder / "jwks.json"
        jwks.write_text(json.dumps({"keys": [key.jwk(private=True) for key in self.keys]}))
        config = self.folder / "config.json"
        document = {
            "issuer": self.issuer,
            "jwks_file": str(jwks),
            "default_resource": self.default_resource,
            "audiences": self.audiences,
            "access_token_ttl": self.access_token_ttl,
            "clients": [client.config() for client in self.clients.values()],
            "public_clients": [client.config() for client in self.public_clients.values()],
            "users": {
                user.name: {"groups": list(user.groups), "claims": dict(user.claims)}
                for user in self.users.values()
            },
        }
        config.write_text(json.dumps(document, indent=2))
        return config

    # -- keys

    @property
    def signing_key(self) -> SigningKey:
        return self.keys[0]

    def jwks(self) -> dict[str, Any]:
        """The public key set the provider serves at jwks_uri."""
        return {"keys": [key.jwk() for key in self.keys]}

    def rotate(self, keep_old: bool = True) -> SigningKey:
        """A new signing key first in the set, the old ones kept after it (or dropped, into
        `retired`); restarted when running (same port, same issuer). Returns the new key."""
        new = SigningKey.generate()
        if not keep_old:
            self.retired.extend(self.keys)
        self.keys = [new, *self.keys] if keep_old else [new]
        if self.running:
            self.restart()
        return new

    # -- tokens

    def token_response(
        self,
        client: str = "team-a",
        scope: str | Iterable[str] | None = None,
        resource: str | None = None,
        secret: str | None = None,
    ) -> httpx.Response:
        """The client_credentials grant over HTTP, as it answered (errors included). scope: None
        asks for every scope the client is allowed, "" for none; resource: the default one when
        None; secret: the client's unless given (a wrong one)."""
        known = self.clients[client]
        wanted = " ".join(known.scopes) if scope is None else _scope_text(scope)
        data = {"grant_type": "client_credentials"}
        if wanted:
            data["scope"] = wanted
        if resource is not None:
            data["resource"] = resource
        credentials = (client, known.secret if secret is None else secret)
        if known.auth_method == "client_secret_post":
            data |= {"client_id": credentials[0], "client_secret": credentials[1]}
            return httpx.post(self.token_endpoint, data=data, timeout=30)
        return httpx.post(self.token_endpoint, data=data, auth=credentials, timeout=30)

    def token(
        self,
        client: str = "team-a",
        scope: str | Iterable[str] | None = None,
        resource: str | None = None,
    ) -> str:
        """A signed JWT access token for `client` (client_credentials); see token_response."""
        response = self.token_response(client, scope, resource)
        assert response.status_code == 200, (
            f"token endpoint: {response.status_code} {response.text}"
        )
        return response.json()["access_token"]

    def user_token(
        self,
        user: str = "alice",
        scope: str | Iterable[str] | None = None,
        resource: str | None = None,
        client: str = "rag-cli",
    ) -> dict[str, Any]:
        """The authorization code grant with PKCE (S256) driven over HTTP, `user` logged in and
        consenting without a page: the token response ({access_token, id_token, scope, ...});
        the access token is a JWT for `resource` (the default one when None), sub = the user."""
        known = self.public_clients[client]
        wanted = " ".join(known.scopes) if scope is None else _scope_text(scope)
        verifier = secrets.token_urlsafe(48)
        challenge = _b64(hashlib.sha256(verifier.encode()).digest())
        resource = resource or self.default_resource
        state = secrets.token_urlsafe(12)
        params = {
            "client_id": client,
            "response_type": "code",
            "redirect_uri": known.redirect_uri,
            "scope": f"openid {wanted}".strip(),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": resource,
        }
        with httpx.Client(timeout=30) as http:
            response = http.get(f"{self.issuer}/auth", params=params)
            for _ in range(10):
                location = response.headers.get("location")
                assert response.is_redirect and location, f"{response.status_code} {response.text}"
                location = urljoin(str(response.url), location)
                if location.startswith(known.redirect_uri):
                    break
                if "/interaction/" in location:
                    location = f"{location}?{httpx.QueryParams(login=user)}"
                response = http.get(location)
            else:
                raise AssertionError("the authorization endpoint never redirected to the client")
            answer = parse_qs(urlsplit(location).query)
            assert answer.get("state") == [state] and "code" in answer, answer
            response = http.post(
                self.token_endpoint,
                data={
                    "grant_type": "authorization_code",
                    "code": answer["code"][0],
                    "redirect_uri": known.redirect_uri,
                    "client_id": client,
                    "code_verifier": verifier,
                    "resource": resource,
                },
            )
        assert response.status_code == 200, (
            f"token endpoint: {response.status_code} {response.text}"
        )
        return response.json()

    def claims(self, client: str = "team-a", **overrides: Any) -> dict[str, Any]:
        """The claims the provider puts in `client`'s token for the default resource (every
        scope it may have), `overrides` applied (None drops a claim)."""
        now = int(time.time())
        known = self.clients.get(client)
        claims: dict[str, Any] = {
            "groups": list(known.groups) if known else [],
            "jti": secrets.token_urlsafe(32),
            "sub": client,
            "iat": now,
            "exp": now + self.access_token_ttl,
            "scope": " ".join(known.scopes) if known else "",
            "client_id": client,
            "iss": self.issuer,
            "aud": self.audiences.get(self.default_resource, self.default_resource),
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def mint(
        self,
        client: str = "team-a",
        *,
        key: SigningKey | None = None,
        headers: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> str:
        """A token the provider never issued, shaped like its own (see claims): signed with its
        signing key unless `key` is given (SigningKey.generate() for one it never had; a key of
        `retired`), headers added or changed (kid= an unknown kid, alg=...)."""
        return (key or self.signing_key).sign(self.claims(client, **overrides), headers)


def _scope_text(scope: str | Iterable[str]) -> str:
    return scope if isinstance(scope, str) else " ".join(scope)


# ---------------------------------------------------------------------------------------------
# fixtures (tests/access/conftest.py imports them)


@pytest.fixture(scope="session")
def oidc_runtime() -> NodeRuntime:
    """The installed oidc-provider packages (once per machine); skips without node or npm."""
    try:
        return install()
    except OidcUnavailable as missing:
        pytest.skip(str(missing))


@pytest.fixture
def make_oidc_provider(
    oidc_runtime: NodeRuntime, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., OidcProvider]]:
    """make_oidc_provider(**OidcProvider options) -> a started provider, stopped at the end."""
    started: list[OidcProvider] = []

    def make(**options: Any) -> OidcProvider:
        provider = OidcProvider(oidc_runtime, tmp_path_factory.mktemp("oidc"), **options)
        started.append(provider)
        return provider.start()

    yield make
    for provider in started:
        provider.stop()


@pytest.fixture
def oidc_provider(make_oidc_provider: Callable[..., OidcProvider]) -> OidcProvider:
    """A started provider with the default clients (team-a, team-b; rag-cli) and users."""
    return make_oidc_provider()
