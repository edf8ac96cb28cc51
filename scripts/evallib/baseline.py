"""The before/after of a change in one run: this checkout's server beside the server of another
checkout (--baseline-tree, e.g. a `git worktree` of main) on a copy of the same store, and their
figures side by side as ratios."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from scripts.evallib.paths import REPO
from scripts.evallib.server import hub_server
from scripts.evallib.stats import latency_summary


def add_baseline_tree(parser: argparse.ArgumentParser) -> None:
    """Add --baseline-tree (none by default: the hub alone) to a benchmark's options."""
    parser.add_argument("--baseline-tree", type=Path, help="another checkout to compare with")


@contextmanager
def hub_servers(
    root: Path, port: int, env: Mapping[str, str], baseline_tree: Path | None = None
) -> Iterator[dict[str, str]]:
    """{"hub": URL} of this checkout's `rag-hub serve` (on `port`) over the store in `root` (its
    collections.yaml and data/, as hub.written_settings leaves them), and with `baseline_tree`,
    "baseline": the URL of that checkout's server (on port + 1) over a copy of `root` beside it;
    `env` added to both. They run until the block ends."""
    with ExitStack() as stack:
        urls = {"hub": stack.enter_context(_serve(root, port, env))}
        if baseline_tree:
            copy = root.with_name(f"{root.name}-baseline")
            shutil.rmtree(copy, ignore_errors=True)  # an earlier run's
            shutil.copytree(root, copy)
            urls["baseline"] = stack.enter_context(
                _serve(copy, port + 1, env, baseline_tree.resolve())
            )
        yield urls


def _serve(root: Path, port: int, env: Mapping[str, str], tree: Path = REPO):
    return hub_server(root / "collections.yaml", root / "data", port, env, tree=tree)


def change(before: float, now: float) -> str:
    """'0.97 (1.31 -> 1.27 ms)': `now` over `before` (milliseconds), and both."""
    return f"{now / before:.2f} ({before:.2f} -> {now:.2f} ms)"


def ratios(mine: Sequence[float], reference: Sequence[float]) -> str:
    """'p50 0.91x, p95 0.95x': the latencies (seconds) of one run over those of the baseline's."""
    a, b = latency_summary(mine), latency_summary(reference)
    return f"p50 {a['p50_ms'] / b['p50_ms']:.2f}x, p95 {a['p95_ms'] / b['p95_ms']:.2f}x"
