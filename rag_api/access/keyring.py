"""Every key the hub knows, and which one a request's token is: the global keys (RAG_API_KEY,
RAG_ADMIN_API_KEY) and the keys file, re-read when it changes; bad tokens are counted per client."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import deque
from pathlib import Path

from rag_api.access.claims import principal_of
from rag_api.access.grant import EVERY, OPEN, Principal, audit_log
from rag_api.access.keys import Key, KeysFile, key_id_of, now, verify
from rag_api.access.tokens import TokenRefused, Tokens, looks_like_jwt
from rag_api.atomic import write_atomically
from rag_api.config.access import OidcConfig
from rag_api.errors import RagError
from rag_api.settings import Settings

log = logging.getLogger("rag_api.access.keyring")
WINDOW_S = 60.0  # the window of RAG_AUTH_FAILURES
RELOAD_S = 1.0  # how often the keys file's stat is looked at
USAGE_FLUSH_S = 60.0
ALL = frozenset({EVERY})
TOKENS_KEPT = 10_000  # tokens whose check is remembered (until they expire): the newest
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class TooManyFailures(RagError):
    code = "TOO_MANY_FAILED_ATTEMPTS"
    status = 429

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many bad keys from this client: retry in {retry_after} s")
        self.headers = {"Retry-After": str(retry_after)}


def global_principals(settings: Settings) -> list[tuple[str, Principal]]:
    """RAG_ADMIN_API_KEY may do everything; RAG_API_KEY reads every collection, and is the hub's
    one key (reads, writes, operations) when no RAG_ADMIN_API_KEY is set."""
    found = []
    if settings.admin_api_key:
        found.append(
            (settings.admin_api_key, Principal("admin", "RAG_ADMIN_API_KEY", ALL, ALL, True))
        )
    if settings.api_key:
        alone = not settings.admin_api_key
        reader = Principal("reader", "RAG_API_KEY", ALL, ALL if alone else frozenset(), admin=alone)
        found.append((settings.api_key, reader))
    return found


class Keyring:
    """The hub's keys and, with `oidc`, the access tokens of an identity provider: a value that
    is a JWT is checked as a token, anything else looked up as a key."""

    def __init__(
        self, settings: Settings, file: KeysFile | None = None, oidc: OidcConfig | None = None
    ) -> None:
        self.globals = global_principals(settings)
        self.oidc = oidc
        self.tokens = Tokens(oidc) if oidc is not None else None
        self._seen_tokens: dict[bytes, tuple[Principal, float]] = {}  # sha256 -> (who, until)
        self.failures = settings.auth_failures
        self.file = file or KeysFile(settings.keys_path)  # replicas: the copy in Qdrant
        self.usage_path = settings.keys_path.with_name(settings.keys_path.name + ".usage")
        self._lock = threading.Lock()
        self._stat: object = None
        self._checked = 0.0
        self._keys: dict[str, Key] = {}
        self._known: dict[bytes, tuple[str, str]] = {}  # sha256(token) -> (key id, hash matched)
        self._failures: dict[str, deque[float]] = {}
        self._used: dict[str, str] = {}
        self._flushed = time.monotonic()
        self._refresher: threading.Thread | None = None  # running: requests never re-read
        self._stopping = threading.Event()
        self._reload(force=True)

    def start(self) -> Keyring:
        """Re-read the keys in a thread of their own every RELOAD_S, so no request waits for it
        (with replicas the keys are a Qdrant document: a round trip)."""
        if self._refresher is None:
            self._stopping.clear()
            self._refresher = threading.Thread(target=self._refresh, name="rag-keys", daemon=True)
            self._refresher.start()
        return self

    def stop(self) -> None:
        refresher, self._refresher = self._refresher, None
        if refresher is not None:
            self._stopping.set()
            refresher.join(5.0)

    def _refresh(self) -> None:
        while not self._stopping.wait(RELOAD_S):
            try:
                self._reload(force=False, due=True)
            except RagError as exc:  # the keys as they were until the next look
                log.warning("keys not re-read: %s", exc.message)

    @property
    def guarded(self) -> bool:
        """Whether any key was ever set: then no route is open (revoking or expiring the last
        scoped key closes the hub rather than opening it; deleting the keys file opens it)."""
        self._reload()
        return bool(self.globals or self._keys or self.file.closed or self.tokens)

    def scoped_keys(self) -> int:
        self._reload()
        return sum(1 for key in self._keys.values() if key.live(now()))

    def summary(self, host: str) -> tuple[int, str]:
        """(log level, line): what is open to whom, said when the server starts."""
        if not self.guarded:
            if host in LOOPBACK:
                return logging.INFO, f"access: no key is set: every route is open on {host}"
            return logging.WARNING, (
                f"access: no key is set and {host} is not loopback: anyone who reaches it may "
                "read, write and run operations (set RAG_API_KEY, or create keys: rag-hub keys)"
            )
        said = []
        for _, principal in self.globals:
            if principal.admin:
                said.append(f"{principal.name} reads, writes and runs operations everywhere")
            else:
                said.append(f"{principal.name} reads every collection")
        if count := self.scoped_keys():
            said.append(f"{count} scoped key(s) from {self.file} as their scopes say")
        if self.oidc is not None:
            said.append(f"access tokens of {self.oidc.issuer} as their claims say")
        return (
            logging.INFO,
            "access: "
            + "; ".join(said)
            + "; without a key: only /health, /ready (no details), /docs and the console's empty pages",
        )

    def known(self, token: str | None) -> Principal | None:
        """Who `token` is when that takes no slow hash (no key set, a global key, a scoped key
        seen before); None otherwise. Counts nothing."""
        if not self.guarded:
            return OPEN
        if token is None:
            return None
        for secret, principal in self.globals:
            if hmac.compare_digest(token.encode(), secret.encode()):
                return principal
        if self.tokens is not None:
            seen = self._seen_tokens.get(hashlib.sha256(token.encode()).digest())
            if seen is not None and seen[1] > time.time():
                return seen[0]
        key_id = key_id_of(token)
        key = self._keys.get(key_id) if key_id else None
        known = self._known.get(hashlib.sha256(token.encode()).digest())
        at = now()
        if key is None or known is None or not key.live(at) or known[1] not in key.hashes(at):
            return None
        self._note_use(key.id, at.isoformat())
        return key.principal()

    def principal(self, token: str | None, client: str) -> Principal | None:
        """Who `token` is; None when it is missing or unknown (expired, revoked). OPEN when the hub
        has no key at all. TooManyFailures when this client sent too many bad tokens lately. A
        scoped key's first use checks its slow hash: call it off the event loop."""
        found = self.known(token)
        if found is not None or token is None:
            return found
        if self.tokens is not None and looks_like_jwt(token):
            return self._token(token, client)
        found = self._scoped(token, client)
        if found is None:
            self._failed(client)
        return found

    def _token(self, token: str, client: str) -> Principal:
        """Who an access token is (its check remembered until it expires, or the provider's keys
        would be fetched again); TokenRefused, counted as a bad key, when it is not accepted;
        Forbidden when its claims grant nothing."""
        assert self.tokens is not None and self.oidc is not None
        self._refuse_if_failing(client)
        try:
            claims = self.tokens.claims(token)
        except TokenRefused as exc:
            audit_log.warning("refused a token from %s: %s", client, exc.message)
            self._failed(client)
            raise
        principal = principal_of(claims, self.oidc)
        until = min(float(claims["exp"]), time.time() + self.oidc.jwks_cache_s)
        with self._lock:
            if len(self._seen_tokens) >= TOKENS_KEPT:
                self._seen_tokens.pop(next(iter(self._seen_tokens)))
            self._seen_tokens[hashlib.sha256(token.encode()).digest()] = (principal, until)
        return principal

    def _scoped(self, token: str, client: str) -> Principal | None:
        key_id = key_id_of(token)
        key = self._keys.get(key_id) if key_id else None
        at = now()
        if key is None or not key.live(at):
            return None
        fingerprint = hashlib.sha256(token.encode()).digest()
        known = self._known.get(fingerprint)
        if known is None or known[1] not in key.hashes(at):
            self._refuse_if_failing(client)  # no slow hash for a client that keeps guessing
            matched = next((h for h in key.hashes(at) if verify(token, h)), None)
            if matched is None:
                return None
            with self._lock:
                self._known[fingerprint] = (key.id, matched)
        self._note_use(key.id, at.isoformat())
        return key.principal()

    def _refuse_if_failing(self, client: str) -> None:
        recent = self._failures.get(client)
        cutoff = time.monotonic() - WINDOW_S
        while recent and recent[0] < cutoff:
            recent.popleft()
        if recent and len(recent) >= self.failures:
            raise TooManyFailures(int(recent[0] + WINDOW_S - time.monotonic()) + 1)

    def _failed(self, client: str) -> None:
        self._refuse_if_failing(client)
        with self._lock:
            self._failures.setdefault(client, deque()).append(time.monotonic())

    def _note_use(self, key_id: str, at: str) -> None:
        self._used[key_id] = at
        if time.monotonic() - self._flushed > USAGE_FLUSH_S:
            self._flushed = time.monotonic()
            threading.Thread(target=self.flush_usage, daemon=True).start()

    def flush_usage(self) -> None:
        """Last use per key, beside the keys file (the server's own file: the CLI edits the other)."""
        with self._lock:
            used = read_usage(self.usage_path) | self._used
        if used:
            write_atomically(self.usage_path, json.dumps(used, indent=2) + "\n", durable=False)

    def _reload(self, force: bool = False, due: bool = False) -> None:
        """Re-read the keys when their stamp changed (looked at once a second at most; on the
        request path only while no refresher runs)."""
        if not (force or due) and (
            self._refresher is not None or time.monotonic() - self._checked < RELOAD_S
        ):
            return
        self._checked = time.monotonic()
        stat = self.file.stamp()
        if stat == self._stat and not force:
            return
        keys = {key.id: key for key in self.file.load()}
        with self._lock:
            self._keys, self._stat, self._known = keys, stat, {}


def read_usage(path: Path) -> dict[str, str]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
