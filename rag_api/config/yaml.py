"""collections.yaml's one reader and writer: YAML 1.2 as plain values, edits that keep comments,
and a syntax error as one line naming the file, line and column."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError

from rag_api.errors import ConfigError

__all__ = ["read_yaml", "round_trip_yaml", "yaml_error", "yaml_text"]


class _Constructor(SafeConstructor):
    """YAML 1.2's core schema: a bare date is text (its own class: the shared one stays as is)."""


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)


def read_yaml(text: str, path: Path) -> Any:
    """A YAML document as plain values, by the hub's one reader: ruamel's safe loader, YAML 1.2
    (`on`/`off`/`yes`/`no` and bare dates are text, `010` is ten, `1_000` a thousand, a key
    twice is an error); a syntax error is a ConfigError naming the file, line and column."""
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = _Constructor
    try:
        return yaml.load(text)
    except YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None


def round_trip_yaml() -> YAML:
    """ruamel's round-trip reader and writer (it resolves values as read_yaml does): comments,
    key order and flow style survive an edit."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def yaml_text(document: Any) -> str:
    """A plain document (dicts, lists, scalars) as YAML text in block style, key order kept:
    what tests and benchmarks write their collections.yaml with."""
    out = io.StringIO()
    round_trip_yaml().dump(document, out)
    return out.getvalue()


def yaml_error(path: Path, exc: Exception) -> str:
    """A YAML syntax error as one line: file, line, column, problem."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    context, at = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and at is not None:
        problem += f" ({context} at line {at.line + 1}, column {at.column + 1})"
    return " ".join(f"{path}: invalid YAML{where}: {problem}".split())
