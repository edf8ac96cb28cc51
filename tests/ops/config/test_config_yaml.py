"""collections.yaml as people write it: syntax errors in one line, anchors survive a migration,
and the values YAML 1.1 and 1.2 read differently read the same in the server and in an edit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.config import EmbedderConfig, config_from_text, load_config
from rag_api.errors import ConfigError
from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.config.file import set_embedder, set_retrieval, with_embedder, with_retrieval
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


def test_a_key_written_twice_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "collections.yaml"
    path.write_text("default_collection: a\ndefault_collection: b\ncollections: {}\n")
    with pytest.raises(ConfigError, match=r"invalid YAML at line 2, column 1: found duplicate key"):
        load_config(path)


# each value YAML 1.1 (PyYAML) reads otherwise: on/off/yes/no as booleans, 010 as eight, a bare
# date as a date; in the retrieval block an edit rewrites and in blocks it leaves alone
SCALARS = """\
default_collection: docs
collections:
  docs:
    kb: {kb}
    description: 2024-01-05
    citations: off
    embedder: {{provider: hash, model: hash-test, dim: 64}}
    retrieval:
      top_k: 010
      candidates: 1_000
      threshold: 0.25
    routing:
      keywords: [on, off, yes, no, 2024-01-05, "010"]
  other:
    kb: {kb}
    enabled: no
    description: yes
    embedder: {{provider: hash, model: hash-test, dim: 64}}
    retrieval: {{rrf_k: 1_000, top_k: 010}}
"""


def _scalars(config) -> dict:
    docs, other = config.collections["docs"], config.collections["other"]
    return {
        "description": (docs.description, other.description),
        "citations": docs.citations,
        "enabled": other.enabled,
        "top_k": (docs.retrieval.top_k, other.retrieval.top_k),
        "candidates": docs.retrieval.candidates,
        "rrf_k": other.retrieval.rrf_k,
        "keywords": docs.routing.keywords,
    }


EXPECTED = {
    "description": ("2024-01-05", "yes"),
    "citations": False,
    "enabled": False,
    "top_k": (10, 10),
    "candidates": 1000,
    "rrf_k": 1000,
    "keywords": ["on", "off", "yes", "no", "2024-01-05", "010"],
}


@pytest.mark.parametrize("edit", ["retrieval", "embedder"])
def test_yaml_1_1_lookalikes_read_the_same_before_and_after_an_edit(
    tmp_path: Path, edit: str
) -> None:
    path = tmp_path / "collections.yaml"
    path.write_text(SCALARS.format(kb=tmp_path))
    assert _scalars(load_config(path)) == EXPECTED
    if edit == "retrieval":
        current = load_config(path).collections["docs"].retrieval
        block = current.model_copy(update={"threshold": 0.4})
        _, new = with_retrieval(path, "docs", block)
        assert set_retrieval(path, "docs", block)
    else:
        block = EmbedderConfig(provider="hash", model="2024-01-06", dim=64)
        _, new = with_embedder(path, "docs", block)
        assert set_embedder(path, "docs", block)
    served = load_config(path)  # what the server loads equals what the edit validated
    assert served == config_from_text(new, path)
    assert _scalars(served) == EXPECTED
    assert getattr(served.collections["docs"], edit) == block
    assert path.read_text() == new


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


@pytest.mark.slow
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
