"""The house: rag_api's packages in layers along the data flow (docs/architecture.md); a module
imports only from lower layers (or its own package), and no module imports one that imports it
back."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("rag_api",)
# low -> high: a package (or top-level module) of rag_api
LAYERS = (
    {
        "rag_api",
        "settings",
        "config",
        "errors",
        "payload",
        "metadata",
        "schema",
        "providers",
        "atomic",
        "redact",
    },
    {"observability", "access", "jobs"},
    {"store"},  # nothing of ours but the foundation: Qdrant stays behind it
    {"embedding"},
    {"llm"},
    {"points"},
    {"indexing", "search"},
    {"hub"},
    {"routing", "watcher", "console"},
    {"answering"},
    {"evaluation", "kbadmin", "openai_compat", "uploads"},
    {"ops"},
    {"http"},  # imported by the entry points only
    {"cli", "client"},
    {"asgi", "__main__"},
)
FOUNDATION = LAYERS[0]


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


def unit(module: str) -> str:
    """The package (or top-level module) a module belongs to, as LAYERS names it."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rag_api"


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import that does not run down the layers (or stay within its package, or, for the
    foundation's modules, between them: the cycle test keeps those apart)."""
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    wrong = []
    for module, targets in sorted(graph.items()):
        source = unit(module)
        for target in sorted(targets):
            to = unit(target)
            if source == to or (source in FOUNDATION and to in FOUNDATION):
                continue
            if source not in layer or to not in layer or layer[to] >= layer[source]:
                wrong.append(f"{module} -> {target}")
    return wrong


def test_imports_run_down_the_layers() -> None:
    assert upward(module_imports()) == []


def test_the_layer_check_sees_an_arrow_up_and_a_package_without_a_layer() -> None:
    graph = {
        "rag_api.store.base": {"rag_api.hub", "rag_api.errors"},
        "rag_api.http.app": {"rag_api.hub"},
        "rag_api.search.rerank": {"rag_api.indexing.kb"},
        "rag_api.attic.old": {"rag_api.errors"},
    }
    assert upward(graph) == [
        "rag_api.attic.old -> rag_api.errors",
        "rag_api.search.rerank -> rag_api.indexing.kb",
        "rag_api.store.base -> rag_api.hub",
    ]


def test_the_top_level_holds_a_dozen_modules_at_most() -> None:
    top = [
        p.stem for p in (REPO / "rag_api").glob("*.py") if p.stem not in {"__init__", "__main__"}
    ]
    assert len(top) <= 12, sorted(top)


def test_no_import_cycles() -> None:
    assert cycles(module_imports()) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
