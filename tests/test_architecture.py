"""The package layering: no module of rag_api or the indexer imports one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("rag_api", "indexer")


def module_imports() -> dict[str, set[str]]:
    """Each module and the modules of ours it imports (TYPE_CHECKING and function-level too)."""
    files = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(Path(path).read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {_owner(t, files) for t in targets if t.startswith(PACKAGES)} - {name, None}
    return graph


def _owner(target: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name lives in (`rag_api.store.Selector` -> `rag_api.store`)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other (strongly connected, more than one)."""
    reach = {m: _reachable(graph, m) for m in graph}
    groups = {tuple(sorted(m2 for m2 in reach[m] if m in reach[m2])) for m in graph}
    return sorted(list(group) for group in groups if len(group) > 1)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = {start}
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_import_cycles() -> None:
    assert cycles(module_imports()) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
