"""Hand-made mutation testing: put small realistic bugs into a scratch copy, one at a time, and
check that the tests written for them fail (issue 36).

    .venv/bin/python scripts/mutants.py            # every mutant
    .venv/bin/python scripts/mutants.py overlap    # the mutants whose name contains "overlap"

The mutants are listed in scripts/mutant_catalogue.py. The scratch copy holds the repository's
files as they are in the working tree (tracked and untracked, not ignored), so tests not yet
committed are audited too; the checkout itself is never edited. First every test is run on the unmutated copy (it must pass, or a "caught" would mean
nothing), then each mutant is applied, its tests run, and the file restored. Tests run with the
checkout's .venv and PYTHONPATH set to the copy, from the copy (the copy's rag_api is the one
imported; the script checks that). Prints a table: mutant, test, caught yes/no; exits 1 when a
mutant survives or a test fails unmutated.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the repository's scripts package

from scripts.mutant_catalogue import MUTANTS  # noqa: E402

# the checkout's .venv; a worktree without one runs with the interpreter that runs this script
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
TIMEOUT_S = 600


def scratch_copy(into: Path) -> None:
    """The working tree's files (tracked and untracked, not ignored) copied under `into`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if not source.is_file():  # deleted in the working tree, or a submodule
            continue
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[bool, str]:
    """Whether the tests passed in the copy, and the last lines of their output."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    command = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", *tests]
    try:
        done = subprocess.run(
            command, cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT_S} s"
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    return done.returncode == 0, tail


def check_imports(copy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    where = subprocess.run(
        [str(PYTHON), "-c", "import rag_api; print(rag_api.__file__)"],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not Path(where).is_relative_to(copy):
        sys.exit(f"the copy's rag_api is not the one imported ({where}): the audit would lie")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="?", default="", help="run mutants whose name has this")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args()
    mutants = [m for m in MUTANTS if args.only.lower() in m.name.lower()]
    copy = Path(tempfile.mkdtemp(prefix="rag-mutants-"))
    rows: list[tuple[str, str, str, str]] = []
    ok = True
    try:
        scratch_copy(copy)
        check_imports(copy)
        for test in dict.fromkeys(t for m in mutants for t in m.tests):
            started = time.monotonic()
            passed, tail = run_tests(copy, (test,))
            rows.append(("(none: baseline)", test, "passes" if passed else "FAILS", ""))
            print(
                f"baseline {test}: {'passes' if passed else 'FAILS'} "
                f"({time.monotonic() - started:.0f} s)",
                file=sys.stderr,
            )
            if not passed:
                ok = False
                print(tail, file=sys.stderr)
        for mutant in mutants:
            path = copy / mutant.path
            original = path.read_text()
            if original.count(mutant.old) != 1:
                rows.append((mutant.name, "-", "NOT APPLIED", "the code to mutate has changed"))
                ok = False
                continue
            path.write_text(original.replace(mutant.old, mutant.new))
            try:
                for test in mutant.tests:
                    started = time.monotonic()
                    passed, tail = run_tests(copy, (test,))
                    caught = not passed
                    ok = ok and caught
                    last = tail.splitlines()[-1] if tail else ""
                    rows.append((mutant.name, test, "yes" if caught else "NO", last))
                    print(
                        f"{mutant.name} / {test}: {'caught' if caught else 'SURVIVED'} "
                        f"({time.monotonic() - started:.0f} s)",
                        file=sys.stderr,
                    )
            finally:
                path.write_text(original)
    finally:
        if args.keep:
            print(f"scratch copy kept: {copy}", file=sys.stderr)
        else:
            shutil.rmtree(copy, ignore_errors=True)
    print("| mutant | test | caught |")
    print("|---|---|---|")
    for name, test, caught, _ in rows:
        print(f"| {name} | `{test.split('/')[-1]}` | {caught} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
