"""Passage links: the link a citation carries authorises reading that one chunk and nothing else.
It is signed by the hub (HMAC-SHA256 over the collection, the source, the chunk and an expiry),
so whoever holds the chat holds the citation: a chat UI that opens it in a new tab, or a person
without a key, reads the passage; an altered or expired link reads nothing (docs/openai.md)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag_api.errors import RagError

VERSION = "p1"  # a token's first part: how the rest reads
PAGE = "/passages"  # the route a link opens: PAGE/{token}
SECRET_BYTES = 32


class LinkRefused(RagError):
    """A passage link that was altered, or is not one."""

    code = "LINK_INVALID"
    status = 404  # names nothing: as an unknown page


class LinkExpired(LinkRefused):
    code = "LINK_EXPIRED"
    status = 410


@dataclass(frozen=True)
class Cited:
    """What a passage link names: one chunk of one document."""

    collection: str
    source: str
    chunk_index: int
    expires: int  # epoch seconds


class PassageLinks:
    """Tokens of passage links (`ttl_s` None: links are off); `secret` is asked when one is
    first made or read (a reader of replicas may start before the writer made it)."""

    def __init__(
        self,
        secret: Callable[[], bytes],
        ttl_s: float | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.secret = secret
        self.ttl_s = ttl_s
        self.clock = clock

    @property
    def enabled(self) -> bool:
        return self.ttl_s is not None

    def token(self, collection: str, source: str, chunk_index: int) -> str:
        """A token naming the chunk, valid for the configured time from now."""
        assert self.ttl_s is not None, "passage links are off (RAG_LINK_TTL=off)"
        claims = {"c": collection, "s": source, "i": chunk_index}
        claims["e"] = int(self.clock() + self.ttl_s)
        body = _b64(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode())
        return f"{VERSION}.{body}.{self._sign(body)}"

    def url(self, base_url: str, collection: str, source: str, chunk_index: int) -> str:
        """The chunk's passage page under `base_url` (where people reach the hub)."""
        return f"{base_url.rstrip('/')}{PAGE}/{self.token(collection, source, chunk_index)}"

    def read(self, token: str) -> Cited:
        """The chunk a token names; LinkRefused for one altered or not a token, LinkExpired
        for one past its time (its signature checked first: an expiry is not believed unsigned)."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != VERSION:
            raise LinkRefused("this is not a passage link of this hub")
        _, body, signature = parts
        if not hmac.compare_digest(signature, self._sign(body)):
            raise LinkRefused("this passage link was altered, or signed by another hub")
        try:
            claims = json.loads(_unb64(body))
            cited = Cited(str(claims["c"]), str(claims["s"]), int(claims["i"]), int(claims["e"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise LinkRefused("this passage link cannot be read") from exc
        if cited.expires < self.clock():
            raise LinkExpired(
                "this passage link has expired: ask the question again for a fresh one"
            )
        return cited

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self.secret(), body.encode(), hashlib.sha256).digest())


def secret_file(path: Path, given: str | None = None) -> Callable[[], bytes]:
    """The secret of one node: `given` (RAG_LINK_SECRET), else the bytes of `path`, made once
    (random, owner-only) the first time it is asked for."""
    if given:
        return lambda: given.encode()
    found: list[bytes] = []

    def secret() -> bytes:
        if not found:
            found.append(_read_or_make(path))
        return found[0]

    return secret


def _read_or_make(path: Path) -> bytes:
    """The secret in `path`; made whole beside it (owner-only) and linked into place, so two
    processes that make one at once end with the same one, never half of it."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    made = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    handle = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(secrets.token_bytes(SECRET_BYTES))
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(made, path)
        except FileExistsError:
            pass  # another process linked its own first: that one is the secret
    finally:
        made.unlink(missing_ok=True)
    return path.read_bytes()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
