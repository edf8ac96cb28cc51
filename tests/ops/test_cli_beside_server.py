"""The CLI beside a running server: reads go through it with the reader key, writes say why not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.server.listening import RECORD
from tests.conftest import hash_collection, run_cli, write_config

READER, ADMIN = "reader-secret", "admin-secret"


def world(tmp_path: Path, **entry: object) -> tuple[Path, Path]:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("## Refunds\n\nRefunds are possible within 30 days of purchase.\n")
    return write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, **entry)}), kb


@pytest.mark.slow
def test_reads_go_through_the_server_found_where_it_recorded_it(
    tmp_path: Path, make_settings, serve
) -> None:
    config, _ = world(tmp_path)
    settings = make_settings(config, api_key=READER, admin_api_key=ADMIN)
    server = serve(settings)  # on its own port: RAG_PORT below says nothing about it
    sync_collection(server.hub.collection("docs"))
    record = settings.qdrant_path / RECORD
    assert json.loads(record.read_text())["url"] == server.url
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(settings.data_dir), "RAG_API_KEY": READER}

    listed = run_cli("collections", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [(r["name"], r["points"]) for r in json.loads(listed.stdout)] == [("docs", 1)]
    answer = run_cli("query", "docs", "refund days", "--no-generate", "--json", env=env)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["sources"][0]["source"] == "faq.md"
    checked = run_cli("check", "--json", "--sample", "0", env=env)  # the reader key is enough
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["collections"][0]["points"] == 1

    repaired = run_cli("check", "--repair", "--json", env=env)  # repairing needs the admin key
    assert repaired.returncode == 2
    assert json.loads(repaired.stdout)["error"]["code"] == "UNAUTHORIZED"
    wrote = run_cli("index", env=env)
    assert wrote.returncode == 1 and len(wrote.stderr.strip().splitlines()) == 1
    assert (
        f"the rag-hub server at {server.url}" in wrote.stderr and "/v1/rag/reload" in wrote.stderr
    )

    server.stop()
    assert not record.exists()
    alone = run_cli("collections", "--json", env=env)  # no server: the CLI opens the store
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)[0]["points"] == 1


def test_a_cold_query_prints_its_warning_once(tmp_path: Path, make_settings) -> None:
    config, _ = world(tmp_path, llm={"provider": "ollama", "model": "llama3.2"})
    settings = make_settings(config)
    hub = Hub.open(settings)
    try:
        sync_collection(hub.collection("docs"))
    finally:
        hub.close()
    env = {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(settings.data_dir),
        "RAG_OLLAMA_URL": settings.ollama_url,  # nothing listens there
    }
    answer = run_cli("query", "docs", "refund days", env=env)
    assert answer.returncode == 0, answer.stderr
    output = answer.stdout + answer.stderr
    assert output.count("Connection refused") == 1, output
    assert "warning: Ollama at" in answer.stderr


@pytest.mark.slow
def test_the_cli_sends_a_scoped_key_from_rag_key_or_key(
    tmp_path: Path, make_settings, serve
) -> None:
    from rag_api.access.keys import KeysFile

    kb = tmp_path / "other"
    kb.mkdir()
    (kb / "a.md").write_text("## Plans\n\nThe team plan costs 10 euros.\n")
    config, docs_kb = world(tmp_path)
    collections = {"docs": hash_collection(docs_kb), "soporte": hash_collection(kb)}
    config = write_config(config, collections)
    settings = make_settings(config, api_key=READER, admin_api_key=ADMIN)
    keys = KeysFile(settings.keys_path)
    _, team = keys.create("team", ["soporte"], [])
    _, ops = keys.create("ops", [], ["*"], admin=True)
    serve(settings)
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(settings.data_dir)}

    anonymous = run_cli("collections", "--json", env=env)  # no global key in the environment
    assert anonymous.returncode == 1 and "bearer token" in anonymous.stderr, anonymous.stderr
    listed = run_cli("collections", "--json", env={**env, "RAG_KEY": team})
    assert listed.returncode == 0, listed.stderr
    assert [r["name"] for r in json.loads(listed.stdout)] == ["soporte"]
    option = run_cli("--key", team, "collections", "--json", env={**env, "RAG_KEY": "rag_bad_x"})
    assert [r["name"] for r in json.loads(option.stdout)] == ["soporte"]  # --key over RAG_KEY
    refused = run_cli("--key", team, "check", "--repair", "--json", env=env)
    assert json.loads(refused.stdout)["error"]["code"] == "FORBIDDEN"
    repaired = run_cli("--key", ops, "check", "--repair", "--json", "--sample", "0", env=env)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
