"""The keys file: for each scoped key an id, a name, a slow hash of its secret (never the secret),
its scopes, times and an optional expiry; written atomically, mode 0600."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rag_api.access.grant import EVERY, Principal
from rag_api.atomic import write_atomically
from rag_api.errors import ConfigError, InvalidRequest, RagError

PREFIX = "rag_"
# scrypt: ~30 ms and 16 MiB a check, paid once per secret (rag_api.access.keyring remembers it)
SCRYPT = {"n": 2**14, "r": 8, "p": 1}


class KeyNotFound(RagError):
    code = "KEY_NOT_FOUND"
    status = 404


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def hash_secret(secret: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, **SCRYPT)
    return "scrypt$" + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode()


def verify(secret: str, stored: str) -> bool:
    scheme, salt, digest = stored.split("$")
    if scheme != "scrypt":
        return False
    found = hashlib.scrypt(secret.encode(), salt=base64.b64decode(salt), **SCRYPT)
    return hmac.compare_digest(found, base64.b64decode(digest))


def key_id_of(secret: str) -> str | None:
    """The id a secret names (`rag_<id>_<random>`), or None for any other token."""
    if not secret.startswith(PREFIX):
        return None
    key_id, _, rest = secret[len(PREFIX) :].partition("_")
    return key_id if key_id and rest else None


@dataclass(frozen=True)
class Key:
    id: str
    name: str
    hash: str
    read: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    admin: bool = False
    created: str = ""
    expires: str | None = None
    revoked: str | None = None
    previous_hash: str | None = None  # the secret before `rotate`, valid until previous_until
    previous_until: str | None = None
    metrics: bool = False  # may scrape /metrics

    def principal(self) -> Principal:
        return Principal(
            self.id,
            self.name,
            frozenset(self.read),
            frozenset(self.write),
            self.admin,
            self.metrics,
        )

    def live(self, at: datetime) -> bool:
        return self.revoked is None and (self.expires is None or at < _time(self.expires))

    def hashes(self, at: datetime) -> list[str]:
        """The hashes a secret may match now: the current one, and the rotated one in its grace."""
        grace = self.previous_hash and self.previous_until and at < _time(self.previous_until)
        return [self.hash, self.previous_hash] if grace else [self.hash]

    def shown(self, last_used: str | None) -> dict[str, Any]:
        """What `keys list` shows: never a hash, never a secret."""
        fields = asdict(self)
        for secret in ("hash", "previous_hash"):
            fields.pop(secret)
        return fields | {"last_used": last_used}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def parse_duration(text: str) -> timedelta:
    """`90d`, `12h`, `30m`: a key's lifetime or a rotation's grace."""
    units = {"d": "days", "h": "hours", "m": "minutes"}
    number, unit = text[:-1], text[-1:]
    if unit not in units or not number.isdigit() or int(number) == 0:
        raise InvalidRequest(f"'{text}' is not a duration such as 90d, 12h or 30m")
    return timedelta(**{units[unit]: int(number)})


def scope(names: str | None) -> list[str]:
    """`docs,soporte` or `*` as a scope list."""
    found = [n.strip() for n in (names or "").split(",") if n.strip()]
    return [EVERY] if EVERY in found else sorted(set(found))


def keys_of(document: dict[str, Any], where: object) -> list[Key]:
    try:
        return [Key(**entry) for entry in document["keys"]]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{where}: not a keys file ({exc})") from exc


def document_of(keys: list[Key]) -> dict[str, Any]:
    return {"version": 1, "keys": [asdict(key) for key in keys]}


class KeysFile:
    """The file at `path` (RAG_KEYS_FILE): read whole, changed whole. (Replicas keep the same
    document in Qdrant: rag_api.replicas.shared_keys.)"""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __str__(self) -> str:
        return str(self.path)

    @property
    def closed(self) -> bool:
        """Whether every key must be refused (keys that cannot be known yet)."""
        return False

    def stamp(self) -> object:
        """Changes when the keys may have changed (the file's stat)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def load(self) -> list[Key]:
        if not self.path.exists():
            return []
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigError(f"{self.path}: not a keys file ({exc})") from exc
        return keys_of(document, self.path)

    def save(self, keys: list[Key]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # created 0600; write_atomically keeps a file's mode
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        write_atomically(self.path, json.dumps(document_of(keys), indent=2) + "\n")

    def create(
        self,
        name: str,
        read: list[str],
        write: list[str],
        admin: bool = False,
        expires: timedelta | None = None,
        metrics: bool = False,
    ) -> tuple[Key, str]:
        """A new key and its secret (shown once: only its hash is kept)."""
        if not (read or write or admin or metrics):
            raise InvalidRequest("a key needs a scope: --read, --write, --admin or --metrics")
        keys = self.load()
        key_id = secrets.token_hex(4)
        secret = f"{PREFIX}{key_id}_{secrets.token_urlsafe(24)}"
        created = now()
        key = Key(
            key_id,
            name,
            hash_secret(secret),
            read,
            write,
            admin,
            created.isoformat(),
            (created + expires).isoformat() if expires else None,
            metrics=metrics,
        )
        self.save([*keys, key])
        return key, secret

    def revoke(self, key_id: str) -> Key:
        return self._change(key_id, lambda key: replace(key, revoked=now().isoformat()))

    def rotate(self, key_id: str, grace: timedelta) -> tuple[Key, str]:
        """A new secret for the key; the old one keeps working for `grace`."""
        secret = f"{PREFIX}{key_id}_{secrets.token_urlsafe(24)}"
        key = self._change(
            key_id,
            lambda key: replace(
                key,
                hash=hash_secret(secret),
                previous_hash=key.hash,
                previous_until=(now() + grace).isoformat(),
            ),
        )
        return key, secret

    def _change(self, key_id: str, change: Any) -> Key:
        keys = self.load()
        found = [key for key in keys if key.id == key_id and key.revoked is None]
        if not found:
            raise KeyNotFound(f"no live key with id '{key_id}' in {self}")
        changed = change(found[0])
        self.save([changed if key.id == key_id else key for key in keys])
        return changed
