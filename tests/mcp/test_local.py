"""The key `rag-hub mcp` works with on its own store (rag_api.mcp.local.LocalKey), over the hub's
real keyring: no key set at all is everything open; keys set and none given, or one the hub does
not know, is refused before anything is served, naming the keys the hub has; a known key is who
it is, and a key revoked while the command runs is no longer anyone."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.access.grant import OPEN
from rag_api.access.keyring import Keyring, TooManyFailures
from rag_api.access.keys import KeysFile
from rag_api.errors import Unauthorized
from rag_api.mcp.local import CLIENT, LocalKey
from rag_api.settings import Settings
from tests.conftest import wait_for

GIVEN_NONE = (
    "and rag-hub mcp was given none: pass one with --key or RAG_KEY (a scoped key: rag-hub keys "
    "create NAME --read COLLECTION); without a key it opens nothing"
)
UNKNOWN = "mistyped, revoked or expired (rag-hub keys list shows the live ones)"


def keyring(tmp_path: Path, **keys: str) -> Keyring:
    settings = Settings(config=tmp_path / "collections.yaml", data_dir=tmp_path / "data", **keys)
    return Keyring(settings)


def refused(ring: Keyring, key: str | None, given: str = "--key") -> str:
    with pytest.raises(Unauthorized) as refusal:
        LocalKey(ring, key, given)
    return refusal.value.message


def test_with_no_key_set_everything_is_open(tmp_path) -> None:
    local = LocalKey(keyring(tmp_path), None, "RAG_API_KEY")
    assert local.first == OPEN and local.principal() == OPEN


def test_a_scoped_key_is_who_it_is_until_it_is_revoked(tmp_path) -> None:
    ring = keyring(tmp_path)
    file = KeysFile(ring.file.path)
    key, secret = file.create("notes bot", ["docs"], ["notes"])
    ring = keyring(tmp_path)
    local = LocalKey(ring, secret, "--key")
    assert (local.first.id, local.first.name) == (key.id, "notes bot")
    assert local.first.write == frozenset({"notes"}) and local.principal() == local.first
    assert (local.keyring, local.key) == (ring, secret)
    file.revoke(key.id)
    wait_for(lambda: local.principal() is None, timeout=10)  # the keys file is re-read each second


def test_a_global_key_is_the_hubs_own(tmp_path) -> None:
    local = LocalKey(keyring(tmp_path, api_key="global-secret"), "global-secret", "RAG_API_KEY")
    assert local.first.name == "RAG_API_KEY"


def test_keys_set_and_none_given_is_refused_naming_the_keys_the_hub_has(tmp_path) -> None:
    ring = keyring(tmp_path, api_key="r", admin_api_key="a")
    assert refused(ring, None) == f"this hub has keys (RAG_ADMIN_API_KEY, RAG_API_KEY) {GIVEN_NONE}"
    KeysFile(ring.file.path).create("notes bot", ["docs"], [])
    KeysFile(ring.file.path).create("desk", ["soporte"], [])
    scoped = keyring(tmp_path)
    assert refused(scoped, None) == (
        f"this hub has keys (2 scoped key(s) in {scoped.file}) {GIVEN_NONE}"
    )


def test_a_key_the_hub_does_not_know_is_refused_naming_where_it_was_read(tmp_path) -> None:
    ring = keyring(tmp_path, api_key="r")
    assert refused(ring, "rk_wrong", "RAG_KEY (or rag-hub --key)") == (
        f"the key in RAG_KEY (or rag-hub --key) is not one this hub knows (RAG_API_KEY): {UNKNOWN}"
    )


def test_when_every_scoped_key_is_revoked_the_refusal_says_so(tmp_path) -> None:
    file = KeysFile(keyring(tmp_path).file.path)
    key, secret = file.create("notes bot", ["docs"], [])
    file.revoke(key.id)
    ring = keyring(tmp_path)
    assert refused(ring, secret) == (
        f"the key in --key is not one this hub knows (every key in {ring.file} revoked or "
        f"expired): {UNKNOWN}"
    )


def test_bad_keys_count_against_rag_hub_mcp_until_it_is_refused_for_a_while(tmp_path) -> None:
    ring = keyring(tmp_path, api_key="r", auth_failures=1)
    refused(ring, "rk_wrong")
    with pytest.raises(TooManyFailures):
        ring.principal("rk_wrong_again", CLIENT)
