"""collections.yaml edits, comments kept: a migration's embedder, `rag-hub eval --write`'s
retrieval settings."""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from rag_api.atomic import write_atomically
from rag_api.config import (
    EmbedderConfig,
    RetrievalConfig,
    config_from_text,
    round_trip_yaml,
    yaml_error,
)
from rag_api.errors import ConfigError


def with_embedder(path: Path, name: str, embedder: EmbedderConfig) -> tuple[str, str]:
    """collections.yaml's text now, and with `name`'s embedder replaced (validated): a block that
    anchors, aliases or merge keys share with another collection is copied first, so every other
    collection's effective config stays as it was."""
    wanted = embedder.model_dump(exclude_defaults=True)
    return _with_block(path, name, "embedder", embedder, wanted, drop_others=True)


def with_retrieval(path: Path, name: str, retrieval: RetrievalConfig) -> tuple[str, str]:
    """collections.yaml's text now, and with `name`'s retrieval block set to `retrieval`: only
    the keys whose value changes are written (the others, and their comments, stay)."""
    old = path.read_text(encoding="utf-8")
    current = config_from_text(old, path).collection(name).retrieval
    before, after = current.model_dump(), retrieval.model_dump()
    changed = {key: value for key, value in after.items() if before[key] != value}
    return _with_block(path, name, "retrieval", retrieval, changed, drop_others=False)


def _with_block(
    path: Path, name: str, key: str, block: Any, wanted: dict[str, Any], drop_others: bool
) -> tuple[str, str]:
    """The file's text now and with `wanted` set in `name`'s `key` block (keys not wanted
    removed when `drop_others`), refused unless the result loads with `block` as that block
    and every other collection unchanged."""
    old = path.read_text(encoding="utf-8")
    yaml = round_trip_yaml()
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
    current = entry.get(key)
    if isinstance(current, CommentedMap) and id(current) not in shared and not current.merge:
        for old_key in [k for k in current if drop_others and k not in wanted]:
            del current[old_key]
        for new_key, value in wanted.items():
            if current.get(new_key) != value:
                _drop_line_comment(current, new_key)  # it described the old value
            current[new_key] = value
    elif drop_others or current is None:
        entry[key] = CommentedMap(wanted)
    else:  # a shared or merged block: this collection gets its own copy, with the changes
        entry[key] = CommentedMap({**current, **wanted})
    out = io.StringIO()
    yaml.dump(document, out)
    new = out.getvalue()
    _only_changes(path, old, new, name, key, block)  # never write a file that would not load
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
    return _write(path, *with_embedder(path, name, embedder))


def set_retrieval(path: Path, name: str, retrieval: RetrievalConfig) -> bool:
    """Write `name`'s new retrieval settings into collections.yaml; False when it had them."""
    return _write(path, *with_retrieval(path, name, retrieval))


def _write(path: Path, old: str, new: str) -> bool:
    if old == new:
        return False
    write_atomically(path, new)
    return True


def _only_changes(path: Path, old: str, new: str, name: str, key: str, block: Any) -> None:
    """Refuse an edit that would change anything but `name`'s `key` block."""
    before, after = (config_from_text(text, path) for text in (old, new))
    expected = before.collections[name].model_copy(update={key: block})
    for other, cfg in before.collections.items():
        if after.collections.get(other) != (expected if other == name else cfg):
            raise ConfigError(
                f"{path}: changing the {key} of '{name}' would change '{other}' too "
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
