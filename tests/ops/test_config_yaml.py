"""collections.yaml as people write it: syntax errors in one line, anchors survive a migration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.config import EmbedderConfig, load_config
from rag_api.errors import ConfigError
from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.config_file import set_embedder, with_embedder
from tests.conftest import run_cli

BIG = EmbedderConfig(provider="hash", model="hash-big", dim=1024)


def test_a_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "collections.yaml"
    path.write_text(
        "default_collection: docs\ncollections:\n  docs:\n    kb: [kb/docs\n    language: en\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.message
    assert "\n" not in message and str(path) in message and "<unicode string>" not in message
    assert "invalid YAML at line 5, column 13: expected" in message


ANCHORED = """\
# two collections, one embedder block
default_collection: one
collections:
  one:
    kb: {kb}
    embedder: &mini   # shared by both
      provider: hash
      model: hash-test
      dim: 64
  two:
    kb: {kb}
    embedder: *mini
"""

MERGED_EMBEDDER = """\
default_collection: one
collections:
  one:
    kb: {kb}
    embedder:
      <<: &e {{provider: hash, model: hash-test}}
      dim: 64
  two:
    kb: {kb}
    embedder:
      <<: *e
      dim: 64
"""

WHOLE_ALIAS = """\
default_collection: one
collections:
  one: &one
    kb: {kb}
    embedder: {{provider: hash, model: hash-test, dim: 64}}
  two: *one
"""


def effective(path: Path) -> dict[str, dict]:
    return {n: c.model_dump(mode="json") for n, c in load_config(path).collections.items()}


@pytest.mark.parametrize("text", [ANCHORED, MERGED_EMBEDDER, WHOLE_ALIAS])
@pytest.mark.parametrize("migrated", ["one", "two"])
def test_a_migration_changes_only_its_collection(tmp_path: Path, text: str, migrated: str) -> None:
    path = tmp_path / "collections.yaml"
    path.write_text(text.format(kb=tmp_path / "kb"))
    before = effective(path)
    assert set_embedder(path, migrated, BIG)
    after = effective(path)
    other = "two" if migrated == "one" else "one"
    assert after[other] == before[other]
    assert after[migrated]["embedder"] == {
        **before[migrated]["embedder"],
        "model": "hash-big",
        "dim": 1024,
    }
    assert {k: v for k, v in after[migrated].items() if k != "embedder"} == {
        k: v for k, v in before[migrated].items() if k != "embedder"
    }
    if "# shared by both" in text:
        assert "# shared by both" in path.read_text()  # comments kept


def test_merge_keys_of_a_whole_collection(tmp_path: Path) -> None:
    text = """\
default_collection: one
collections:
  one: &base
    language: en
    kb: {kb}
    embedder: {{provider: hash, model: hash-test, dim: 64}}  # the small one
  two:
    <<: *base
    language: es
""".format(kb=tmp_path / "kb")
    path = tmp_path / "collections.yaml"
    path.write_text(text)
    for migrated, other in (("one", "two"), ("two", "one")):
        path.write_text(text)
        before = effective(path)
        set_embedder(path, migrated, BIG)
        after = effective(path)
        assert after[other] == before[other] and after[migrated]["embedder"]["dim"] == 1024


def test_the_dry_run_diff_shows_the_unsharing(tmp_path: Path) -> None:
    path = tmp_path / "collections.yaml"
    path.write_text(ANCHORED.format(kb=tmp_path / "kb"))
    old, new = with_embedder(path, "one", BIG)
    assert "*mini" not in new and new.count("model: hash-test") == 1  # two got the old block


def test_the_other_collection_is_queryable_after_migrate_and_restart(
    tmp_path: Path, make_settings
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("Cormorants dry their wings in the sun.")
    path = tmp_path / "collections.yaml"
    path.write_text(ANCHORED.format(kb=kb))
    hub = Hub.open(make_settings(path))
    for name in ("one", "two"):
        sync_collection(hub.collection(name))
    hub.close()
    env = {"RAG_CONFIG": str(path), "RAG_DATA_DIR": str(tmp_path / "data"), "RAG_QDRANT_URL": ""}
    args = ["--provider", "hash", "--model", "hash-big", "--dim", "1024", "--yes"]
    migrated = run_cli("migrate", "one", *args, env=env)
    assert migrated.returncode == 0, migrated.stderr
    # a restart: a fresh process reads the file again
    for name in ("one", "two"):
        answer = run_cli("query", name, "cormorants", "--no-generate", "--json", env=env)
        assert answer.returncode == 0, answer.stderr
        assert json.loads(answer.stdout)["sources"][0]["source"] == "a.md"
    assert effective(path)["two"]["embedder"]["dim"] == 64
