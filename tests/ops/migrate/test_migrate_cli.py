"""`rag-hub migrate` as an operator runs it: plan, confirmation, dry run, crash and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.ops.migrate.versions import versions
from rag_api.settings import Settings
from tests.conftest import REPO, free_port, hash_collection, run_cli, wait_for, write_config
from tests.support.migration_world import SlowUpstream, fill, write_api

NOTE = "# Collections of the office hub. Keep this note.\n"


@pytest.fixture
def world(tmp_path, make_settings) -> dict[str, str]:
    """An embedded-store collection of ~300 chunks (file and API), no server: the CLI's env."""
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, dim=768)})
    config.write_text(NOTE + config.read_text().replace("dim: 768", "dim: 768  # the old model"))
    hub = Hub.open(make_settings(config))
    fill(hub.collection("docs"), kb)
    write_api(hub.collection("docs"), range(6, 70), 4)
    hub.close()
    return {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_PORT": str(free_port()),
        "RAG_QDRANT_URL": "",
    }


def store_state(env: dict[str, str], make_settings) -> tuple[str | None, list[str]]:
    hub = Hub.open(make_settings(Path(env["RAG_CONFIG"])))
    try:
        return hub.store.alias_target("docs"), versions(hub.store, "docs")
    finally:
        hub.close()


@pytest.mark.slow
def test_usage_dry_run_and_no_terminal(world, make_settings) -> None:
    original = open(world["RAG_CONFIG"]).read()
    proc = run_cli("migrate", "docs", env=world)
    assert proc.returncode == 2 and "give --provider, --model and --dim" in proc.stderr
    proc = run_cli("migrate", "docs", "--provider", "hash", "--model", "big", env=world)
    assert proc.returncode == 2 and "missing --dim" in proc.stderr

    args = ["migrate", "docs", "--provider", "hash", "--model", "big", "--dim", "1024"]
    proc = run_cli(*args, "--dry-run", env=world)
    assert proc.returncode == 0, proc.stderr
    assert "docs: hash:hash-test (768d) -> hash:big (1024d)" in proc.stdout
    assert "chunks in docs__v1, re-embedded into docs__v2" in proc.stdout
    assert (
        "-      dim: 768  # the old model\n" in proc.stdout and "+      dim: 1024\n" in proc.stdout
    )
    proc = run_cli(*args, env=world)  # stdin is not a terminal and no --yes
    assert proc.returncode == 2
    assert "no terminal to confirm on: pass --yes" in proc.stderr
    assert open(world["RAG_CONFIG"]).read() == original
    assert store_state(world, make_settings) == ("docs__v1", ["docs__v1"])


@pytest.mark.slow
def test_killed_migration_resumes(world, make_settings) -> None:
    with SlowUpstream(dim=32, open_for=5) as upstream:
        args = ["migrate", "docs", "--provider", "openai", "--model", "fake-embed", "--dim", "32",
                "--base-url", f"{upstream.url}/v1", "--yes"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO), **world}
        crashed = subprocess.Popen(
            [sys.executable, "-m", "rag_api", *args], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        # answered: the dimension probe + 2 batches of 64 chunks (32 a request); the next hangs
        wait_for(lambda: len(upstream.calls("/v1/embeddings")) > 5, timeout=120)
        crashed.send_signal(signal.SIGKILL)
        crashed.wait(timeout=30)
        assert crashed.returncode == -signal.SIGKILL
        assert store_state(world, make_settings) == ("docs__v1", ["docs__v1", "docs__v2"])

        upstream.gate.set()
        proc = run_cli(*args, env=world)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "resuming: docs__v2 already holds 128 points" in proc.stdout
    assert "128 already there" in proc.stdout
    text = open(world["RAG_CONFIG"]).read()
    assert text.startswith(NOTE) and "model: fake-embed" in text and "the old model" not in text
    assert store_state(world, make_settings) == ("docs__v2", ["docs__v1", "docs__v2"])

    proc = run_cli("migrate", "docs", "--drop-old", env=world)
    assert proc.returncode == 0 and "dropped docs__v1" in proc.stdout
    assert store_state(world, make_settings) == ("docs__v2", ["docs__v2"])


def test_a_server_of_another_store_on_the_port_is_not_asked(world, tmp_path, serve) -> None:
    """`migrate` asks a running server to migrate (it switches its own model with the alias),
    but only the server of this store: another hub listening on RAG_PORT (a second hub on the
    machine, or a port taken meanwhile) is not this one."""
    other = tmp_path / "other"
    other.mkdir()
    config = write_config(other / "collections.yaml", {"docs": hash_collection(dim=64)})
    settings = Settings(config=config, data_dir=other / "data", qdrant_url=None)
    hub = Hub.open(settings)
    write_api(hub.collection("docs"), range(0, 1), 4)
    foreign = serve(settings, hub, port=int(world["RAG_PORT"]))
    args = ["migrate", "docs", "--provider", "hash", "--model", "big", "--dim", "1024"]
    proc = run_cli(*args, "--dry-run", env=world)
    assert proc.returncode == 0, proc.stderr
    assert "docs: hash:hash-test (768d) -> hash:big (1024d)" in proc.stdout
    with foreign.client() as http:  # the other hub's collection is as it was
        assert http.get("/v1/rag/status").json()["embedding_dim"] == 64
