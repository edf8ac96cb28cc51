"""Chunk metadata is a flat, bounded map (rag_api.metadata): what is kept, and a kb line that would
have made the embedded store unreadable is skipped while the rest of the file is indexed."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from rag_api.metadata import (
    KEY_MAX_CHARS,
    LIST_MAX_ITEMS,
    MAX_KEYS,
    STRING_MAX_CHARS,
    InvalidMetadata,
    check_metadata,
)
from tests.conftest import hash_collection, run_cli, write_config


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"cliente_id": 456, "pais": "es", "vip": True, "score": 0.5, "nota": None},
        {"tags": ["a", "b", 3, 2.5, False, None]},
        {f"k{i}": i for i in range(MAX_KEYS)},
        {"k" * KEY_MAX_CHARS: "v" * STRING_MAX_CHARS},
        {"ids": list(range(LIST_MAX_ITEMS)), "big": 2**63 - 1, "small": -(2**63)},
        {"page number": 12, "file.name": "a.md", "título": "ñ"},
    ],
)
def test_valid_metadata_is_kept_as_is(metadata: dict) -> None:
    assert check_metadata(metadata) is metadata


def test_invalid_metadata_names_the_key() -> None:
    with pytest.raises(InvalidMetadata, match="key 'deep': a nested list"):
        check_metadata({"ok": 1, "deep": [[1]]})
    with pytest.raises(InvalidMetadata, match="an object of keys to values, not list"):
        check_metadata([1])


@pytest.mark.parametrize(
    ("metadata", "key"),
    [
        ({"score": math.nan}, "score"),
        ({"score": math.inf}, "score"),
        ({"score": -math.inf}, "score"),
        ({"ok": 1.5, "scores": [0.5, math.inf]}, "scores.1"),
        ({"scores": [-math.inf]}, "scores.0"),
    ],
)
def test_nan_and_infinity_are_refused(metadata: dict, key: str) -> None:
    with pytest.raises(InvalidMetadata, match=rf"^{re.escape(key)}: NaN and Infinity"):
        check_metadata(metadata)


def test_negative_zero_is_a_number_like_any_other() -> None:
    metadata = {
        "delta": -0.0,
        "deltas": [-0.0, 0.0],
        "tiny": -5e-324,
        "huge": 1.7976931348623157e308,
    }
    assert check_metadata(metadata) is metadata
    assert math.copysign(1.0, metadata["delta"]) == -1.0  # kept as given, sign and all


@pytest.mark.slow
def test_a_poisoned_kb_line_is_skipped_and_the_store_opens_again(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    poison = {"text": "poison", "source": "p", "metadata": {"k": json.loads("[" * 126 + "]" * 126)}}
    lines = [{"text": "Zebras graze next to wildebeest.", "source": "z"}, poison]
    (kb / "notes.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(kb)})
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}
    indexed = run_cli("index", env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert "notes.jsonl: line 2: metadata: nested more than 64 levels deep" in indexed.stdout
    # a new process replays the store's log and reads every payload back
    found = run_cli("query", "notes", "zebras", "--no-generate", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert [s["source"] for s in json.loads(found.stdout)["sources"]] == ["z"]
    checked = run_cli("check", "notes", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
