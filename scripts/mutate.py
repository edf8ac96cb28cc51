"""Mutation testing with mutmut (issue 62): mutate the modules a change touched, or the ones named,
and run the tests of their area on each mutant; print the score and the survivors.

    make mutate                                      # the rag_api modules changed vs origin/main
    make mutate MODULES="rag_api/jobs rag_api/http/forward.py"
    .venv/bin/python scripts/mutate.py rag_api/replicas --rev HEAD   # the committed tests
    .venv/bin/python scripts/mutate.py rag_api/mcp/tools.py --tests tests/mcp/test_tools.py

Each module's tests are its area's folder (rag_api/replicas/... -> tests/replicas), or the ones
TESTS_FOR names. Modules with the same tests are mutated in one mutmut session, in a scratch copy
of the working tree (tracked and untracked files, not ignored; or of a commit with --rev): the
checkout is never edited. mutmut runs, for each mutant, only the tests that called the mutated
function (it records them in a first, clean run), so a module whose code runs only in a child
process (a `rag-hub` the tests start) has mutants with "no tests". A mutant is killed when a test
fails, or when it hangs (mutmut's timeout, pytest-timeout's --timeout). The hand-written
catalogue (scripts/mutants.py, scripts/mutant_catalogue.py) stays: it pins named behaviours.
Exits 1 when the score of a session is under --min-score (0 by default: report only).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the repository's scripts package

from scripts.mutants import scratch_copy  # noqa: E402

VENV_BIN = ROOT / ".venv" / "bin"
BIN = VENV_BIN if (VENV_BIN / "mutmut").exists() else Path(sys.executable).parent

# the modules whose tests are not (only) the folder of their name
TESTS_FOR = {
    "rag_api/http/forward.py": ("tests/http/test_forward.py",),
    # its parts alone (tests/store/test_index_aside.py builds real indexes: a minute a mutant)
    "rag_api/store/edge_optimize.py": ("tests/store/test_edge_optimize.py",),
    "rag_api/indexing/text_facts.py": ("tests/indexing/test_text_facts.py",),
    "rag_api/jobs": ("tests/jobs", "tests/http/test_jobs.py"),
    "rag_api/replicas/shared_sources.py": ("tests/replicas/test_shared_sources.py",),
    "rag_api/config": ("tests/test_config.py",),
    "rag_api/settings.py": ("tests/test_config.py",),
    "rag_api/catalog.py": ("tests/points",),
    "rag_api/atomic.py": ("tests/points",),
    "rag_api/payload.py": ("tests/store",),
    "rag_api/schema.py": ("tests/test_api.py", "tests/http"),
    "rag_api/asgi.py": ("tests/test_api.py",),
    "rag_api/__main__.py": ("tests/cli",),
    # direct tests, hubs in process (most of tests/openai_compat and tests/mcp serve hubs); the
    # follow-up tables of test_condense.py that search the shipped kb load real models: left out
    "rag_api/openai_compat/condense.py": (
        "tests/openai_compat/test_condense.py::test_a_question_is_read_as_dependent_undecided_or_its_own_topic",
        "tests/openai_compat/test_condense.py::test_a_follow_up_of_exactly_max_terms_content_words_is_still_short",
        "tests/openai_compat/test_condense_search.py",
    ),
    "rag_api/openai_compat/tasks.py": ("tests/openai_compat/test_tasks.py",),
    "rag_api/mcp/words.py": ("tests/mcp/test_words.py",),
    "rag_api/mcp/tools.py": ("tests/mcp/test_tools.py",),
    "rag_api/mcp/documents.py": ("tests/mcp/test_documents.py",),
    "rag_api/mcp/schemas.py": ("tests/mcp/test_schemas.py",),
    "rag_api/mcp/relay.py": ("tests/mcp/test_mcp_relay.py", "tests/mcp/test_relay_parts.py"),
    "rag_api/mcp/server.py": ("tests/mcp/test_server.py",),
    "rag_api/mcp/local.py": ("tests/mcp/test_local.py",),
    "rag_api/openai_compat/functions.py": ("tests/openai_compat/test_functions.py",),
    "rag_api/openai_compat/model_names.py": ("tests/openai_compat/test_model_names.py",),
    "rag_api/openai_compat/embeddings.py": ("tests/openai_compat/test_embeddings_usage.py",),
    "rag_api/openai_compat/stored.py": ("tests/openai_compat/test_stored.py",),
    "rag_api/openai_compat/chat.py": ("tests/openai_compat/test_chat_parts.py",),
    "rag_api/openai_compat/conversation.py": ("tests/openai_compat/test_conversation_parts.py",),
    "rag_api/openai_compat/responses.py": ("tests/openai_compat/test_responses_parts.py",),
    "rag_api/openai_compat/models.py": ("tests/openai_compat/test_request_models.py",),
    "rag_api/openai_compat/reply.py": (
        "tests/openai_compat/test_reply_parts.py",
        "tests/openai_compat/test_reply_paths.py",
    ),
    # the replicas' parts with direct tests on qdrant-client's in-memory mode (tests/replicas
    # starts hubs: its code runs in child processes, minutes a mutant)
    "rag_api/replicas/lease.py": (
        "tests/replicas/test_lease.py",
        "tests/replicas/test_lease_keeping.py",
    ),
    "rag_api/replicas/pointers.py": ("tests/replicas/test_pointers.py",),
    "rag_api/replicas/shared_keys.py": ("tests/replicas/test_shared_keys.py",),
    "rag_api/replicas/role.py": ("tests/replicas/test_role.py",),
    "rag_api/replicas/shared_links.py": (
        "tests/access/test_links.py::test_replicas_share_the_writers_secret",
        "tests/replicas/test_shared_links.py",
    ),
}
# per test: a mutant that hangs one fails it (and counts as killed) in this many seconds
TEST_TIMEOUT_S = 120
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def changed_modules() -> list[str]:
    """The rag_api files changed vs origin/main (else HEAD), untracked ones included."""
    base = "origin/main"
    if subprocess.run(
        ["git", "rev-parse", "-q", "--verify", base], cwd=ROOT, capture_output=True
    ).returncode:
        base = "HEAD"
    listed = subprocess.run(
        ["git", "diff", "--name-only", base, "--", "rag_api"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    listed += subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "rag_api"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return sorted({m for m in listed if m.endswith(".py") and (ROOT / m).exists()})


def tests_for(module: str) -> tuple[str, ...]:
    """The tests of a module's area: TESTS_FOR's entry for it or a folder above it, else
    tests/<package> for rag_api/<package>/..., tests/test_<name>.py for rag_api/<name>.py."""
    path = Path(module.rstrip("/"))
    for key in (path, *path.parents):
        if str(key) in TESTS_FOR:
            return TESTS_FOR[str(key)]
    parts = path.parts
    guess = f"tests/{parts[1]}" if len(parts) > 2 or not module.endswith(".py") else None
    if guess is None:
        guess = f"tests/test_{path.stem}.py"
    if not (ROOT / guess).exists():
        sys.exit(f"no tests found for {module} (looked for {guess}): name them in TESTS_FOR")
    return (guess,)


def copy_of(rev: str | None, into: Path) -> None:
    if rev is None:
        scratch_copy(into)
        return
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def write_config(work: Path, modules: list[str], tests: tuple[str, ...]) -> None:
    """[tool.mutmut] in the copy's pyproject.toml (mutmut reads it from the working directory)."""
    also_copy = sorted(
        p.name
        for p in work.iterdir()
        if p.name not in {"rag_api", "tests", "mutants", "mutmut.log"}
    )
    lines = [
        "",
        "[tool.mutmut]",
        'source_paths = ["rag_api"]',
        f"only_mutate = {modules!r}",
        f"pytest_add_cli_args_test_selection = {list(tests)!r}",
        # one process per mutant (mutmut forks): no xdist; a hung test fails in TEST_TIMEOUT_S
        f'pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "--timeout={TEST_TIMEOUT_S}"]',
        f"also_copy = {also_copy!r}",
        "use_git_change_detection = false",
        "",
    ]
    with open(work / "pyproject.toml", "a") as config:
        config.write("\n".join(lines).replace("'", '"'))


def results(work: Path) -> dict[str, str]:
    """Each mutant's name and status, from `mutmut results --all true`."""
    out = subprocess.run(
        [str(BIN / "mutmut"), "results", "--all", "true"],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(re.findall(r"^\s+(\S+): (.+)$", out, re.MULTILINE))


def diff_line(work: Path, mutant: str) -> str:
    """The mutated line, as `- before` / `+ after`, from `mutmut show`."""
    shown = subprocess.run(
        [str(BIN / "mutmut"), "show", mutant], cwd=work, capture_output=True, text=True
    ).stdout
    changed = [
        line.strip()
        for line in shown.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return "  |  ".join(changed)


def run_session(work: Path, modules: list[str], tests: tuple[str, ...], jobs: int, log) -> float:
    """mutmut run in the copy; the score (killed / all mutants)."""
    write_config(work, modules, tests)
    print(f"\n== {' '.join(modules)}  (tests: {' '.join(tests)}; in {work})", flush=True)
    # the `rag-hub` children the tests start import the copy's mutants/ too (PYTHONPATH=REPO in
    # tests/conftest.py) and inherit the mutant's name: mutmut's trampolines run there as well
    started = time.monotonic()
    ran = subprocess.run(
        [str(BIN / "mutmut"), "run", "--max-children", str(jobs)],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    took = time.monotonic() - started
    if ran.returncode:  # the tests fail unmutated, or mutmut could not run them
        print(f"  mutmut stopped (exit {ran.returncode}): see {work}/mutmut.log", flush=True)
        return 0.0
    statuses = results(work)
    killed = sum(s in KILLED for s in statuses.values())
    total = len(statuses)
    survivors = {m: s for m, s in statuses.items() if s not in KILLED}
    for mutant, status in sorted(survivors.items()):
        print(f"  {status:9} {mutant}\n            {diff_line(work, mutant)}")
    score = killed / total if total else 1.0
    print(f"  score {killed}/{total} = {score:.2f} in {took:.0f} s", flush=True)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="files or folders under rag_api/")
    parser.add_argument("--rev", help="mutate and test this commit's files, not the working tree")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--workdir", type=Path, help="keep the copies here (mutmut show, browse)")
    parser.add_argument("--min-score", type=float, default=0.0)
    parser.add_argument(
        "--tests", nargs="+", help="run these tests on every mutant (not TESTS_FOR's or the area's)"
    )
    args = parser.parse_args()

    modules = args.modules or changed_modules()
    if not modules:
        print("no rag_api module changed: name some (make mutate MODULES=...)")
        return
    files = []  # a folder named stands for its files: each goes with its own tests
    for module in modules:
        path = ROOT / module
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        files += [str(f.relative_to(ROOT)) for f in found]
    sessions: dict[tuple[str, ...], list[str]] = {}
    for module in files:
        tests = tuple(args.tests) if args.tests else tests_for(module)
        sessions.setdefault(tests, []).append(module)

    base = args.workdir or Path(tempfile.mkdtemp(prefix="rag-hub-mutate-"))
    failed = False
    for n, (tests, group) in enumerate(sessions.items()):
        work = base / str(n)
        work.mkdir(parents=True, exist_ok=False)
        copy_of(args.rev, work)
        with open(work / "mutmut.log", "w") as log:
            failed |= run_session(work, group, tests, args.jobs, log) < args.min_score
    print(f"\nmutmut's output and results: {base}/*/ (mutmut.log; `mutmut show NAME` there)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
