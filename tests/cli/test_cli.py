"""The rag-hub command: one-line errors, exit 1 for domain errors and 2 for usage; idempotent index."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from rag_api.store.edge import EdgeStore
from tests.conftest import run_cli


@pytest.mark.slow
def test_index_twice_embeds_zero_the_second_time(workspace: dict[str, str]) -> None:
    first = run_cli("index", env=workspace)
    assert first.returncode == 0, first.stderr
    assert "docs: 3 files (3 indexed, 0 unchanged, 0 removed); chunks: 3 embedded" in first.stdout
    assert "broken.jsonl: line 2: invalid JSON" in first.stdout
    second = run_cli("index", "--json", env=workspace)
    (report,) = json.loads(second.stdout)
    assert (report["indexed"], report["unchanged"], report["chunks_embedded"]) == (0, 3, 0)


@pytest.mark.slow
def test_query_and_collections(workspace: dict[str, str]) -> None:
    run_cli("index", env=workspace)
    answer = run_cli("query", "docs", "refund days", "--json", env=workspace)
    body = json.loads(answer.stdout)
    assert body["sources"][0]["source"] == "faq.md" and "30 days" in body["answer"]
    only = run_cli(
        "query", "docs", "days", "--source", "policy.md", "--no-generate", "--json", env=workspace
    )
    assert {s["source"] for s in json.loads(only.stdout)["sources"]} == {"policy.md"}
    human = run_cli("query", "docs", "refund days", env=workspace)
    assert "30 days" in human.stdout and "[1] faq.md#0" in human.stdout
    (row,) = json.loads(run_cli("collections", "--json", env=workspace).stdout)
    assert (row["name"], row["points"], row["embedder"]) == ("docs", 3, "hash:hash-test")


@pytest.mark.slow
def test_domain_errors_are_one_line_exit_1(workspace: dict[str, str], tmp_path: Path) -> None:
    unknown = run_cli("query", "nope", "x", env=workspace)
    assert unknown.returncode == 1
    assert (
        unknown.stderr.strip() == "error: collection 'nope' is not configured in collections.yaml"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "default_collection: docs\ncollections:\n  docs:\n    embedder: {provider: hash, model: h, dim: 8, size: 3}\n"
    )
    checked = run_cli("config", "check", env={**workspace, "RAG_CONFIG": str(bad)})
    assert checked.returncode == 1
    assert (
        checked.stderr.strip()
        == f"error: {bad}: collection 'docs': embedder.size: Extra inputs are not permitted"
    )
    ok = run_cli("config", "check", env=workspace)
    assert ok.returncode == 0 and "valid, 1 collections" in ok.stdout


@pytest.mark.slow
def test_usage_errors_exit_2(workspace: dict[str, str]) -> None:
    assert run_cli("query", "docs", env=workspace).returncode == 2
    assert run_cli("query", "docs", "x", "--mode", "fuzzy", env=workspace).returncode == 2
    assert run_cli("query", "docs", "x", "--filter", "novalue", env=workspace).returncode == 2
    huge = run_cli("query", "docs", "x", "--filter", f"n={2**64}", env=workspace)
    assert huge.returncode == 2 and "integer outside the signed 64-bit range" in huge.stderr
    assert run_cli("frobnicate", env=workspace).returncode == 2
    assert run_cli("--help").returncode == 0 and run_cli("-h").stdout.startswith("Usage: rag-hub")


def test_writing_while_a_server_owns_the_store(workspace: dict[str, str]) -> None:
    holder = EdgeStore(Path(workspace["RAG_DATA_DIR"]) / "qdrant")
    try:
        locked = run_cli("index", env=workspace)
    finally:
        holder.close()
    assert locked.returncode == 1
    assert "is in use by pid" in locked.stderr and "HTTP admin API" in locked.stderr
    assert len(locked.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_package_s(flag: str) -> None:
    result = run_cli(flag)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"rag-hub {metadata.version('rag-hub')}\n"


@pytest.mark.slow
def test_query_takes_the_label_filters(workspace: dict[str, str], tmp_path: Path) -> None:
    from rag_api.hub import Hub
    from rag_api.settings import Settings
    from rag_api.store import Selector
    from tests.support.labels import label, labels

    run_cli("index", env=workspace)
    settings = Settings(config=workspace["RAG_CONFIG"], data_dir=workspace["RAG_DATA_DIR"])
    hub = Hub.open(settings)
    try:
        label(hub.collection("docs"), Selector(sources=("faq.md",)), labels("boilerplate", 0.9))
        label(hub.collection("docs"), Selector(sources=("policy.md",)), labels("prose", 0.2))
    finally:
        hub.close()

    def found(*options: str) -> set[str]:
        ran = run_cli("query", "docs", "days", "--no-generate", "--json", *options, env=workspace)
        assert ran.returncode == 0, ran.stderr
        return {s["source"] for s in json.loads(ran.stdout)["sources"]}

    assert "faq.md" not in found() and "policy.md" not in found()
    assert "faq.md" in found("--types", "boilerplate,prose", "--min-quality", "0")
    assert "policy.md" in found("--min-quality", "0.1")
    human = run_cli("query", "docs", "days", "--types", "boilerplate", env=workspace)
    assert "boilerplate quality=0.90" in human.stdout
    bad = run_cli("query", "docs", "x", "--types", "prose,footer", env=workspace)
    assert bad.returncode == 2 and "filters.types.1" in bad.stderr
    assert run_cli("query", "docs", "x", "--min-quality", "2", env=workspace).returncode == 2
