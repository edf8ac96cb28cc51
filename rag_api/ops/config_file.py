"""collections.yaml edits made by a migration: the collection's embedder, comments kept."""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from rag_api.atomic import write_atomically
from rag_api.config import EmbedderConfig, parse_config, yaml_error
from rag_api.errors import ConfigError


def with_embedder(path: Path, name: str, embedder: EmbedderConfig) -> tuple[str, str]:
    """collections.yaml's text now, and with `name`'s embedder replaced (validated): a block that
    anchors, aliases or merge keys share with another collection is copied first, so every other
    collection's effective config stays as it was."""
    old = path.read_text(encoding="utf-8")
    yaml = _yaml()
    try:
        document = yaml.load(old)
    except YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None
    try:
        collections = document["collections"]
        entry = collections[name]
    except (KeyError, TypeError):
        raise ConfigError(f"{path}: no collection '{name}' to change") from None
    if id(entry) in _shared_nodes(document) or entry.merge:
        entry = collections[name] = _copy(entry)  # its values are now shared with the original
    shared = _shared_nodes(document)
    wanted = embedder.model_dump(exclude_defaults=True)
    current = entry.get("embedder")
    if isinstance(current, CommentedMap) and id(current) not in shared and not current.merge:
        for key in [k for k in current if k not in wanted]:
            del current[key]
        for key, value in wanted.items():
            if current.get(key) != value:
                _drop_line_comment(current, key)  # it described the old value
            current[key] = value
    else:
        entry["embedder"] = CommentedMap(wanted)
    out = io.StringIO()
    yaml.dump(document, out)
    new = out.getvalue()
    _only_changes(path, old, new, name, embedder)  # never write a file that would not load
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


def _only_changes(path: Path, old: str, new: str, name: str, embedder: EmbedderConfig) -> None:
    """Refuse an edit that would change anything but `name`'s embedder."""
    before, after = (parse_config(YAML(typ="safe").load(text), path) for text in (old, new))
    expected = before.collections[name].model_copy(update={"embedder": embedder})
    for other, cfg in before.collections.items():
        if after.collections.get(other) != (expected if other == name else cfg):
            raise ConfigError(
                f"{path}: changing the embedder of '{name}' would change '{other}' too "
                "(a block shared through anchors); give the collection its own block first"
            )


def _shared_nodes(document: Any) -> set[int]:
    """Ids of the mappings and lists reached more than once (through aliases or merge keys)."""
    seen: set[int] = set()
    shared: set[int] = set()

    def visit(node: Any) -> None:
        if not isinstance(node, CommentedMap | CommentedSeq):
            return
        if id(node) in seen:
            shared.add(id(node))
            return
        seen.add(id(node))
        if isinstance(node, CommentedSeq):
            for item in node:
                visit(item)
            return
        for _, value in node.non_merged_items():
            visit(value)
        for merged in node.merge:
            visit(merged)

    visit(document)
    return shared


def _copy(entry: CommentedMap) -> CommentedMap:
    """A collection's own mapping with the same effective keys (merged ones included)."""
    copy = CommentedMap()
    for key, value in entry.items():
        copy[key] = value
    return copy


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
