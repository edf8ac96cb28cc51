"""collections.yaml edits made by a migration: the collection's embedder, comments kept."""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from rag_api.atomic import write_atomically
from rag_api.config import EmbedderConfig, parse_config
from rag_api.errors import ConfigError


def with_embedder(path: Path, name: str, embedder: EmbedderConfig) -> tuple[str, str]:
    """collections.yaml's text now, and with `name`'s embedder replaced (validated)."""
    old = path.read_text(encoding="utf-8")
    yaml = _yaml()
    document = yaml.load(old)
    try:
        entry = document["collections"][name]
    except (KeyError, TypeError):
        raise ConfigError(f"{path}: no collection '{name}' to change") from None
    wanted = embedder.model_dump(exclude_defaults=True)
    current = entry.get("embedder")
    if isinstance(current, CommentedMap):
        for key in [k for k in current if k not in wanted]:
            del current[key]
        for key, value in wanted.items():
            if current.get(key) != value:
                _drop_line_comment(current, key)  # it described the old value
            current[key] = value
    else:
        entry["embedder"] = wanted
    out = io.StringIO()
    yaml.dump(document, out)
    new = out.getvalue()
    parse_config(YAML(typ="safe").load(new), path)  # never write a file that would not load
    return old, new


def diff(path: Path, old: str, new: str) -> str:
    """A unified diff of collections.yaml (empty when nothing changes)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
    )
    return "".join(lines)


def writable_or_why(path: Path) -> str | None:
    """Why collections.yaml cannot be replaced by this process (None when it can)."""
    if not path.is_file():
        return f"{path} does not exist"
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(path.parent, os.W_OK):
        return f"{path} (or its folder) is not writable by this user"
    return None


def set_embedder(path: Path, name: str, embedder: EmbedderConfig) -> bool:
    """Write `name`'s new embedder into collections.yaml; False when it already had it."""
    old, new = with_embedder(path, name, embedder)
    if old == new:
        return False
    write_atomically(path, new)
    return True


def _drop_line_comment(mapping: CommentedMap, key: str) -> None:
    token = mapping.ca.items.get(key, [None] * 3)[2]
    # only a comment on the key's own line: a longer token also holds the comment lines below
    if token is not None and token.value.count("\n") <= 1:
        del mapping.ca.items[key]


def _yaml() -> YAML:
    yaml = YAML()  # round trip: comments, key order and flow style survive
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml
