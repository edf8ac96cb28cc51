"""Scoped keys over their life: created by the CLI (the secret printed once, never stored),
rotated with a grace period, revoked on a running server without a restart; bad keys slowed per
client; each write audited; the start line says what is open to whom."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from rag_api.access.keyring import Keyring
from rag_api.access.keys import KeysFile
from rag_api.settings import Settings
from tests.conftest import assert_error_shape, hash_collection, run_cli, wait_for, write_config


@pytest.fixture
def world(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nRefunds take 30 days.\n")
    return write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})


@pytest.mark.slow
def test_the_cli_prints_a_secret_once_and_the_file_never_holds_one(tmp_path, world) -> None:
    env = {"RAG_CONFIG": str(world), "RAG_DATA_DIR": str(tmp_path / "data")}
    created = run_cli("keys", "create", "voice-es", "--read", "docs", "--expires", "90d", env=env)
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("rag_")
    path = tmp_path / "data" / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key_id = json.loads(path.read_text())["keys"][0]["id"]
    rotated = run_cli("keys", "rotate", key_id, "--grace", "1h", env=env)
    new_secret = rotated.stdout.strip().splitlines()[-1]
    # rag_<id>_<random>: the random part may hold "_" itself (URL-safe base64)
    for each in (secret, new_secret, secret.split("_", 2)[2], new_secret.split("_", 2)[2]):
        assert each not in path.read_text()
    listed = json.loads(run_cli("keys", "list", "--json", env=env).stdout)["keys"]
    assert [(k["name"], k["read"], k["write"]) for k in listed] == [("voice-es", ["docs"], [])]
    assert "hash" not in listed[0] and listed[0]["expires"]
    assert run_cli("keys", "revoke", key_id, env=env).returncode == 0
    assert run_cli("keys", "revoke", key_id, env=env).returncode == 1  # already revoked: says so


def test_rotation_keeps_the_old_secret_for_its_grace_only(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, api_key=None, admin_api_key=None)
    keys = KeysFile(settings.keys_path)
    key, old = keys.create("feed", ["docs"], [])
    _, new = keys.rotate(key.id, timedelta(hours=1))
    keyring = Keyring(settings)
    assert keyring.principal(old, "c").name == keyring.principal(new, "c").name == "feed"
    _, newest = keys.rotate(key.id, timedelta(minutes=1))
    keys.save([replace(k, previous_until="2000-01-01T00:00:00+00:00") for k in keys.load()])
    keyring = Keyring(settings)
    assert keyring.principal(newest, "c") is not None
    assert keyring.principal(new, "c") is None  # its grace is over
    assert keyring.principal(old, "c") is None


def test_a_revoked_key_stops_on_a_running_server(tmp_path, world, make_settings, serve) -> None:
    settings = make_settings(world)
    key, secret = KeysFile(settings.keys_path).create("team", ["docs"], ["docs"])
    server = serve(settings)
    mine = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(server.url + "/v1/rag/status", headers=mine).status_code == 200
    KeysFile(settings.keys_path).revoke(key.id)  # what `rag-hub keys revoke` does

    def refused() -> bool:
        return httpx.get(server.url + "/v1/rag/status", headers=mine).status_code == 401

    assert wait_for(refused, timeout=10)
    # the last key revoked: the hub stays closed, it does not fall open
    assert httpx.get(server.url + "/collections").status_code == 401


def test_bad_keys_from_one_client_are_refused_but_a_good_key_still_works(
    world, make_settings, serve
) -> None:
    settings = make_settings(world, api_key="good-key", auth_failures=3)
    server = serve(settings)
    bad = {"Authorization": "Bearer rag_0000_guess"}
    for _ in range(3):
        assert_error_shape(httpx.get(server.url + "/collections", headers=bad), 401, "UNAUTHORIZED")
    slowed = httpx.get(server.url + "/collections", headers=bad)
    assert_error_shape(slowed, 429, "TOO_MANY_FAILED_ATTEMPTS")
    assert int(slowed.headers["retry-after"]) > 0
    good = httpx.get(server.url + "/collections", headers={"Authorization": "Bearer good-key"})
    assert good.status_code == 200


def test_each_write_logs_who_did_what(world, make_settings, serve, caplog) -> None:
    settings = make_settings(world)
    key, secret = KeysFile(settings.keys_path).create("nightly feed", [], ["docs"])
    server = serve(settings)
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    added = httpx.post(
        server.url + "/v1/rag/add/document",
        json={"text": "new note", "source": "crm/42"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert added.status_code == 200, added.text
    line = wait_for(lambda: [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"])
    assert line == [
        f"{key.id} (nightly feed) POST /v1/rag/add/document: add/document on docs added=1 sources=['crm/42'] total_after=1"
    ]
    assert secret not in line[0]


@pytest.mark.parametrize(
    ("keys", "host", "level", "said"),
    [
        ({}, "127.0.0.1", logging.INFO, "no key is set: every route is open on 127.0.0.1"),
        ({}, "0.0.0.0", logging.WARNING, "0.0.0.0 is not loopback"),
        (
            {"api_key": "k"},
            "0.0.0.0",
            logging.INFO,
            "RAG_API_KEY reads, writes and runs operations",
        ),
        (
            {"api_key": "k", "admin_api_key": "a"},
            "0.0.0.0",
            logging.INFO,
            "RAG_ADMIN_API_KEY reads, writes and runs operations everywhere; RAG_API_KEY reads",
        ),
    ],
)
def test_the_start_line_says_what_is_open_to_whom(tmp_path, keys, host, level, said) -> None:
    settings = Settings(data_dir=tmp_path, **{"api_key": None, "admin_api_key": None, **keys})
    found_level, line = Keyring(settings).summary(host)
    assert found_level == level and said in line, line


def test_the_keys_file_is_not_world_readable_even_with_a_loose_umask(tmp_path) -> None:
    old = os.umask(0)
    try:
        KeysFile(tmp_path / "keys.json").create("x", ["*"], [])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600


def test_a_rotated_secret_seen_before_stops_when_its_grace_ends(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, api_key=None, admin_api_key=None)
    keys = KeysFile(settings.keys_path)
    key, old = keys.create("feed", ["docs"], [])
    keys.rotate(key.id, timedelta(seconds=2))
    keyring = Keyring(settings)
    assert keyring.principal(old, "c").name == "feed"  # checked once, then remembered
    assert keyring.known(old).name == "feed"
    time.sleep(3.1)  # the grace ends; the keys file is unchanged, so nothing reloads it
    assert keyring.known(old) is None and keyring.principal(old, "c") is None


def test_valid_scoped_keys_never_count_toward_the_failed_attempt_limit(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, api_key=None, admin_api_key=None, auth_failures=2)
    keys = KeysFile(settings.keys_path)
    secrets = [keys.create(f"team {n}", ["docs"], [])[1] for n in range(4)]
    keyring = Keyring(settings)
    assert keyring.principal("rag_0000_guess", "c") is None  # one failure of two
    for secret in secrets:  # each one's first use (its slow hash) from the same client
        assert keyring.principal(secret, "c") is not None
    assert keyring.principal("rag_0000_guess", "c") is None  # the second failure: still allowed
