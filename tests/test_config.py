"""collections.yaml validation: every mistake is named by collection and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.config import load_config, parse_config
from rag_api.errors import ConfigError
from tests.conftest import REPO, hash_collection, write_config


def test_shipped_config_is_valid() -> None:
    config = load_config(REPO / "collections.yaml")
    assert config.default_collection in config.collections
    languages = {c.language for c in config.collections.values()}
    assert {"en", "es"} <= languages
    for name in config.collections:
        assert config.kb_path(name).is_dir(), name


def test_defaults_and_relative_kb(tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.yaml", {"docs": hash_collection("kb/docs")})
    config = load_config(path)
    docs = config.collection("docs")
    assert docs.chunking.size == 200 and docs.retrieval.rrf_k == 60
    assert config.kb_path("docs") == tmp_path / "kb" / "docs"
    assert docs.embedder.id == "hash:hash-test"


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("collections: [unclosed\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid YAML"):
        load_config(path)


def test_missing_file_says_how_to_point_at_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RAG_CONFIG"):
        load_config(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"embedder": {"dimm": 3}}, r"collection 'docs': embedder\.dimm: Extra inputs"),
        ({"retrieval": {"top_k": 0}}, r"collection 'docs': retrieval\.top_k"),
        (
            {"chunking": {"size": 100, "overlap": 100}},
            r"collection 'docs': chunking: overlap \(100\)",
        ),
        ({"language": "fr"}, r"collection 'docs': language"),
        (
            {"llm": {"provider": "ollama"}},
            r"collection 'docs': llm: provider 'ollama' needs a model",
        ),
        ({"surprise": True}, r"collection 'docs': surprise: Extra inputs"),
        (
            {"llm": {"client_params": {"temprature": "fix"}}},
            r"collection 'docs': llm\.client_params\.temprature: Extra inputs",
        ),
        (
            {"llm": {"extractive_scorer": "meaning"}},
            r"collection 'docs': llm\.extractive_scorer: Input should be 'lexical' or 'semantic'",
        ),
        (
            {"llm": {"client_params": {"seed": "drop"}}},
            r"collection 'docs': llm\.client_params\.seed: Input should be 'allow', 'fix' or",
        ),
    ],
)
def test_errors_name_collection_and_key(entry: dict, expected: str) -> None:
    raw = {"default_collection": "docs", "collections": {"docs": hash_collection(**entry)}}
    with pytest.raises(ConfigError, match=expected):
        parse_config(raw)


def test_unknown_top_level_key_and_default() -> None:
    with pytest.raises(ConfigError, match=r"extra_key: Extra inputs"):
        parse_config(
            {
                "default_collection": "docs",
                "extra_key": 1,
                "collections": {"docs": hash_collection()},
            }
        )
    with pytest.raises(
        ConfigError, match=r"default_collection 'nope' is not one of the collections \(docs\)"
    ):
        parse_config({"default_collection": "nope", "collections": {"docs": hash_collection()}})


@pytest.mark.parametrize("name", ["Docs", "a__b", "has space", "-lead"])
def test_collection_names(name: str) -> None:
    with pytest.raises(ConfigError, match="must be lowercase"):
        parse_config({"default_collection": name, "collections": {name: hash_collection()}})


def test_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        parse_config(["docs"])
