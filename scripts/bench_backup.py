#!/usr/bin/env python3
"""Backup and restore speed, and what a backup costs the voice pipeline's reads, in one run.

Fills a collection with --chunks chunks (hash embedder, 384d, hybrid: what a real collection
stores per point), then measures:
  - baseline: a plain copy of the collection's shard folder (MB/s of the disk, the floor);
  - backup: seconds, MB/s (of the backup written) and how long writes were held;
  - restore: seconds and MB/s (restored --as a second name, the live one untouched);
  - the p95 of /v1/rag/context over HTTP, --callers callers (processes of their own, as the
    voice pipeline is) calling for --seconds while backups alternate with quiet spells as long:
    calls during a backup over calls outside every backup (target <= 1.2x);
  - with --baseline-tree (another checkout, e.g. a `git worktree` of main): the last backup
    restored by this checkout and by that one, each into a fresh store of its own in a child
    process, alternating --restores times each, and the ratio of the medians.
Usage: PYTHONPATH=. python scripts/bench_backup.py [--chunks 20000] [--callers 2] [--seconds 60]
       [--baseline-tree /tmp/wt-main] [--restores 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing import Queue
from pathlib import Path

import httpx

from rag_api.hub import Hub
from rag_api.ops.backup.restore import restore_backup
from scripts.evallib.baseline import add_baseline_tree
from scripts.evallib.hub import HASH, write_numbered, written_settings
from scripts.evallib.paths import REPO
from scripts.evallib.server import app_server
from scripts.evallib.stats import nearest_p95_ms

WORDS = ("invoice refund printer warranty router backup license tablet cloud otter heron lynx "
         "badger falcon marten ibex gecko Lisbon Oslo Quito Hanoi Tunis Perth Lima Riga").split()  # fmt: skip
MB = 1024 * 1024


def text(n: int) -> str:
    words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(60)]
    return f"Record {n}: " + " ".join(words) + "."


def fill(hub: Hub, chunks: int) -> None:
    collection = hub.collection("b")
    write_numbered(collection, chunks, text, {"origin": "api"})
    collection.optimize()


def calls(url: str, k: int, callers: int, until: float, out: Queue) -> None:
    """One caller (a process of its own, as the voice pipeline is): /v1/rag/context back to back
    until the monotonic clock reads `until`; each call's start and end."""
    spans: list[tuple[float, float]] = []
    with httpx.Client(base_url=url, timeout=60) as http:
        n = k
        while time.monotonic() < until:
            started = time.monotonic()
            body = {"query": f"{WORDS[n % len(WORDS)]} {WORDS[(n * 5) % len(WORDS)]}"}
            http.post("/v1/rag/context", json=body).raise_for_status()
            spans.append((started, time.monotonic()))
            n += callers
    out.put(spans)


def backing_up(url: str, folder: Path, until: float, windows: list[tuple[float, float]],
               results: list[dict]) -> None:  # fmt: skip
    """Quiet, then a backup (as the nightly timer asks the server: POST /v1/ops/backup), quiet
    as long as that backup took, the next, ... until `until`: calls during and between backups
    are made under the same conditions."""
    quiet = 5.0
    with httpx.Client(base_url=url, timeout=600) as http:
        while time.monotonic() + quiet < until:
            time.sleep(quiet)
            started = time.monotonic()
            body = {"collections": ["b"], "to": str(folder)}
            job = http.post("/v1/ops/backup", json=body).raise_for_status().json()
            while job["status"] not in ("done", "failed"):
                time.sleep(0.2)
                job = http.get(f"/v1/ops/backup/jobs/{job['id']}").json()
            assert job["status"] == "done", job
            windows.append((started, time.monotonic()))
            results.append(job["result"])
            quiet = windows[-1][1] - started


def split(spans: list[tuple[float, float]], windows: list[tuple[float, float]]):
    """Call seconds during a backup (overlapping one) and outside every backup."""
    during, without = [], []
    for start, end in spans:
        overlaps = any(start < w_end and end > w_start for w_start, w_end in windows)
        (during if overlaps else without).append(end - start)
    return during, without


# what a child process runs with a tree's code first on its path: the backup into a fresh store
RESTORE_CHILD = """
import json, sys, time
from pathlib import Path
from rag_api.hub import Hub
from rag_api.ops.backup.restore import restore_backup
from scripts.evallib.hub import HASH, written_settings
backup, root = Path(sys.argv[1]), Path(sys.argv[2])
entry = {"embedder": HASH, "llm": {"provider": "extractive"}}
hub = Hub.open(written_settings(root, {"b": entry}, ollama_url="http://127.0.0.1:9"))
try:
    started = time.perf_counter()
    restore_backup(hub, backup, as_name="b_restored")
    print(json.dumps({"seconds": time.perf_counter() - started}))
finally:
    hub.close()
"""


def restore_in(tree: Path, backup: Path, root: Path) -> float:
    """Seconds `tree`'s code takes to restore `backup` into a fresh store under `root` (a child
    process with that tree's code; its imports not counted)."""
    done = subprocess.run(
        [sys.executable, "-c", RESTORE_CHILD, str(backup), str(root)],
        env={**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"},
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"restore with {tree} failed:\n{done.stderr[-2000:]}")
    shutil.rmtree(root, ignore_errors=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def side_by_side(baseline: Path, backup: Path, tmp: Path, rounds: int) -> str:
    """The backup restored by this checkout and by `baseline`, alternating, `rounds` each."""
    times: dict[str, list[float]] = {"hub": [], "baseline": []}
    for n in range(rounds):
        order = ("baseline", "hub") if n % 2 == 0 else ("hub", "baseline")
        for which in order:
            tree = REPO if which == "hub" else baseline.resolve()
            times[which].append(restore_in(tree, backup, tmp / f"restore-{which}-{n}"))
    mine, base = (statistics.median(times[k]) for k in ("hub", "baseline"))
    runs = {k: ", ".join(f"{t:.2f}" for t in v) for k, v in times.items()}
    return (f"restore into a fresh store, {rounds} each, alternating: this checkout {runs['hub']} s; "
            f"baseline {runs['baseline']} s; median {mine:.2f} s vs {base:.2f} s: "
            f"{mine / base:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--callers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0, help="calls measured, in all")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--restores", type=int, default=2, help="restores each, with a baseline")
    add_baseline_tree(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        entry = {"embedder": HASH, "llm": {"provider": "extractive"}}
        settings = written_settings(Path(tmp), {"b": entry}, host="127.0.0.1", port=args.port,
                                    ollama_url="http://127.0.0.1:9")  # fmt: skip
        hub = Hub.open(settings)
        started = time.perf_counter()
        fill(hub, args.chunks)
        print(f"filled {args.chunks} chunks in {time.perf_counter() - started:.1f} s")

        shard = settings.qdrant_path / hub.store.alias_target("b")
        started = time.perf_counter()
        shutil.copytree(shard, Path(tmp, "plain-copy"))
        copy_s = time.perf_counter() - started
        copied = sum(
            p.stat().st_blocks * 512 for p in Path(tmp, "plain-copy").rglob("*") if p.is_file()
        )

        with app_server(settings, hub) as url:
            spawn = multiprocessing.get_context("spawn")
            out = spawn.Queue()
            warm = time.monotonic() + 8.0  # the callers' processes start and warm up
            until = warm + args.seconds
            callers = [
                spawn.Process(target=calls, args=(url, k, args.callers, until, out))
                for k in range(args.callers)
            ]
            for caller in callers:
                caller.start()
            time.sleep(max(0.0, warm - time.monotonic()))
            windows: list[tuple[float, float]] = []
            backups: list[dict] = []
            backing_up(url, Path(tmp, "backups"), until, windows, backups)
            spans = [span for _ in callers for span in out.get() if span[0] >= warm]
            for caller in callers:
                caller.join()
            during, baseline = split(spans, windows)

            last = backups[-1]
            size = last["bytes"]
            started = time.perf_counter()
            restore_backup(hub, Path(last["path"]), as_name="b_restored")
            restore_s = time.perf_counter() - started
        hub.close()
        compared = None
        if args.baseline_tree:
            compared = side_by_side(
                args.baseline_tree, Path(last["path"]), Path(tmp), args.restores
            )

    backup_s = sorted(b["seconds"] for b in backups)[len(backups) // 2]
    held_s = max(b["held_s"]["b"] for b in backups)
    print(f"{'':<36}{'seconds':>10}{'MB':>9}{'MB/s':>9}")
    print(
        f"{'baseline: copy of the shard folder':<36}{copy_s:>10.2f}{copied / MB:>9.1f}{copied / MB / copy_s:>9.1f}"
    )
    print(
        f"{'backup (median of ' + str(len(backups)) + ')':<36}{backup_s:>10.2f}{size / MB:>9.1f}{size / MB / backup_s:>9.1f}"
    )
    print(
        f"{'restore (--as, beside the live one)':<36}{restore_s:>10.2f}{size / MB:>9.1f}{size / MB / restore_s:>9.1f}"
    )
    helds = sorted(b["held_s"]["b"] for b in backups)
    print(f"writes held per backup: median {helds[len(helds) // 2]:.3f} s, at most {held_s:.3f} s")
    base, busy = nearest_p95_ms(baseline), nearest_p95_ms(during)
    print(f"/v1/rag/context p95: {base:.1f} ms without a backup ({len(baseline)} calls), "
          f"{busy:.1f} ms during backups ({len(during)} calls): {busy / base:.2f}x (target <= 1.2x)")  # fmt: skip
    if compared:
        print(compared)


if __name__ == "__main__":
    main()
