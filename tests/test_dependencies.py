"""Every package rag_api/ and indexer/ import is declared in pyproject.toml: a module-level or
function-level import by the dependencies, a format's optional package (readers._extra) by an
extra. Packages come installed under other names (bs4 is beautifulsoup4): the installed
distributions map each imported module to its package."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import defaultdict
from importlib.metadata import packages_distributions

import pytest

from tests.conftest import REPO

PACKAGES = ("rag_api", "indexer")
OPTIONAL_LOADER = "_extra"  # rag_api.indexing.readers._extra("openpyxl", ...): an extra's package


def imported_modules() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The top-level modules imported outside the standard library, each with the files that
    import it: (plain imports, modules loaded by the optional loader)."""
    plain: dict[str, set[str]] = defaultdict(set)
    optional: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            where = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        plain[alias.name.partition(".")[0]].add(where)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    plain[node.module.partition(".")[0]].add(where)
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == OPTIONAL_LOADER
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    optional[node.args[0].value.partition(".")[0]].add(where)
    for table in (plain, optional):
        for module in [m for m in table if m in sys.stdlib_module_names or m in PACKAGES]:
            del table[module]
    return plain, optional


def requirement_name(requirement: str) -> str:
    """A requirement's project name, normalized (PEP 503): 'ruamel.yaml>=0.18' -> 'ruamel-yaml'."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert name, requirement
    return normalized(name.group(1))


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def undeclared(project: dict) -> dict[str, set[str]]:
    """Each package imported but not declared where it must be, with the files importing it."""
    base = {requirement_name(r) for r in project["dependencies"]}
    extras = {
        requirement_name(r)
        for requirements in project.get("optional-dependencies", {}).values()
        for r in requirements
    }
    owners = packages_distributions()
    plain, optional = imported_modules()
    missing: dict[str, set[str]] = {}
    for table, allowed in ((plain, base), (optional, base | extras)):
        for module, files in table.items():
            distributions = {normalized(d) for d in owners.get(module, [f"<{module}?>"])}
            if not distributions & allowed:
                missing[" or ".join(sorted(distributions))] = files
    return missing


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.mark.slow
def test_every_imported_package_is_declared() -> None:
    assert undeclared(pyproject()) == {}


def test_a_dependency_taken_out_of_pyproject_is_reported() -> None:
    project = pyproject()
    project["dependencies"] = [
        r
        for r in project["dependencies"]
        if requirement_name(r) not in ("starlette", "ruamel-yaml")
    ]
    project["optional-dependencies"]["pdf"] = []
    # a module some distributions share is reported under all their names: ruamel.yaml < 0.19
    # installs ruamel.yaml.clib into the same `ruamel` package ("ruamel-yaml or ruamel-yaml-clib")
    missing = {
        name: files
        for owners, files in undeclared(project).items()
        for name in owners.split(" or ")
        if name != "ruamel-yaml-clib"
    }
    assert set(missing) == {"starlette", "ruamel-yaml", "pypdf"}
    assert "rag_api/ops/config/file.py" in missing["ruamel-yaml"]
    assert missing["pypdf"] == {"rag_api/indexing/pdf.py"}


def test_the_benchmark_only_packages_stay_out_of_the_runtime() -> None:
    plain, _ = imported_modules()
    assert not {"bm25s", "Stemmer", "fpdf"} & set(plain)
    project = pyproject()
    runtime = {requirement_name(r) for r in project["dependencies"]}
    assert not {"bm25s", "pystemmer", "fpdf2"} & runtime
    assert {requirement_name(r) for r in project["optional-dependencies"]["bench"]} == {
        "bm25s",
        "pystemmer",
        "fpdf2",
    }
