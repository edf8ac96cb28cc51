"""Ingest throughput: `rag-hub index` (sync_collection: read, chunk, label, embed, write) on
SciFact abstracts written as markdown files, in chunks/s, each figure against a baseline of the
same run.

remote: an embedding server on loopback (tests/support/embedding_server.py: OpenAI's shape,
  --latency-ms a request, --capacity requests at once, more wait) behind the collection's
  `openai` embedder at `concurrency` 1 (one request at a time, as before), 4 and 8, against the
  hub's own floor: the same files with the `hash` embedder (no embedding to wait for).
onnx: the bundled model on ONNX Runtime in process, the overlapped pipeline against the code of
  --before (a git revision, run from `git archive` in a child process), on --docs files.

    python scripts/bench_ingest.py remote --docs 5183 --rounds 3
    python scripts/bench_ingest.py onnx --docs 2000 --before 526eb67
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = Path(os.environ.get("BENCH_TREE", ROOT))  # the code measured: this tree, or a revision's
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAG_MODEL_CACHE", str(Path.home() / ".cache" / "rag-hub-bench" / "models"))
sys.path.insert(0, str(TREE))

from rag_api.config import ChunkingConfig  # noqa: E402
from rag_api.indexing.chunking import split_text  # noqa: E402
from rag_api.indexing.sync import sync_collection  # noqa: E402
from scripts.evallib import add_data_dir, load_dataset  # noqa: E402
from scripts.evallib.hub import HASH, MINILM, open_hub  # noqa: E402

CHUNKING = {"size": 512, "overlap": 64}


def write_kb(root: Path, docs: int, data_dir: Path) -> None:
    corpus = load_dataset("scifact", data_dir).corpus
    for doc_id, doc in sorted(corpus.items())[:docs]:
        (root / f"{doc_id}.md").write_text(f"# {doc.title}\n\n{doc.text}\n", encoding="utf-8")


def index(kb: Path, work: Path, embedder: dict) -> dict[str, float]:
    """Index `kb` into a fresh store with `embedder`; chunks, seconds (the index alone: the
    process's one-time costs, a model's load and the splitter's sentence model, before)."""
    entry = {"kb": str(kb), "embedder": embedder, "chunking": CHUNKING}
    hub = open_hub(work, {"bench": entry}, data_dir=work / "data")
    try:
        collection = hub.collection("bench")
        collection.embedders.get(collection.cfg.embedder).embed(["warm up"] * 64)
        split_text(
            "# Warm up\n\n" + "The splitter loads its model. " * 200, ChunkingConfig(**CHUNKING)
        )
        _start_read_pool(collection)
        idle = _idle()
        started = time.perf_counter()
        report = sync_collection(collection)
        seconds = time.perf_counter() - started
        busy = _busy_since(idle)
        chunks = collection.count()
        assert chunks == report.stats.embedded, "every chunk embedded once"
        assert sync_collection(collection).stats.embedded == 0, "nothing the second time"
        pace = getattr(report, "throughput", None)  # the code before had none
        embed_s = pace.embed_s if pace is not None else float("nan")
        return {
            "chunks": chunks,
            "seconds": seconds,
            "chunks/s": chunks / seconds,
            "embed s": embed_s,
            "busy": busy,
        }
    finally:
        hub.close()


def _idle() -> tuple[int, int]:
    """The machine's CPU time so far, all of it and idle (/proc/stat, in clock ticks)."""
    with open("/proc/stat") as stat:
        ticks = [int(n) for n in stat.readline().split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle and waiting for I/O


def _busy_since(start: tuple[int, int]) -> float:
    """How many of the machine's cores were busy since `start`, on average (every process: the
    hub's, its reading workers and the embedding server)."""
    total, idle = _idle()
    spent = total - start[0]
    return len(os.sched_getaffinity(0)) * (1 - (idle - start[1]) / spent) if spent else 0.0


def _start_read_pool(collection) -> None:
    """The reading workers started and ready, as a sync of many files starts them once a process
    (the code before issue 61's second round had none)."""
    try:
        from rag_api.indexing.read_pool import POOL_MIN_FILES
        from rag_api.indexing.sync import file_reader
    except ImportError:
        return
    reader = file_reader(collection, POOL_MIN_FILES)
    if reader.pool is not None:
        reader.pool.wait_ready(300)


def in_child(tree: Path, kb: Path, work: Path, embedder: dict) -> dict[str, float]:
    """`index` with the code of `tree`, in a process of its own."""
    env = {**os.environ, "BENCH_TREE": str(tree)}
    command = [
        sys.executable,
        str(ROOT / "scripts" / "bench_ingest.py"),
        "_one",
        str(kb),
        str(work),
    ]
    command.append(json.dumps(embedder))
    # in the tree: the reading pool's forkserver (python -c) imports rag_api from its working
    # directory first, and Python 3.11's forkserver ignores the parent's sys.path
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def remote(args: argparse.Namespace, kb: Path, tmp: Path) -> None:
    runs: dict[str, list[dict[str, float]]] = {}
    for n in range(args.rounds):  # each round runs every row, in the same order
        for name, row in remote_round(args, kb, tmp / f"round{n}").items():
            runs.setdefault(name, []).append(row)
    rows = {name: _median(own) for name, own in runs.items()}
    chunks = rows["hash floor"]["chunks"]
    print(f"{args.docs} SciFact files, {chunks:.0f} chunks; server {args.latency_ms} ms a")
    print(f"request of 32, capacity {args.capacity} (more wait); the median of {args.rounds}")
    base, floor = rows["concurrency 1"]["chunks/s"], rows["hash floor"]["chunks/s"]
    for name, row in rows.items():
        rate = row["chunks/s"]
        rates = sorted(r["chunks/s"] for r in runs[name])
        spread = f" ({rates[0]:.0f}-{rates[-1]:.0f})" if len(rates) > 1 else ""
        print(
            f"  {name:<14} {rate:8.0f} chunks/s{spread} ({row['seconds']:5.1f} s; embedding"
            f" {row['embed s']:5.1f} s)   x{rate / base:5.2f} of concurrency 1"
            f"   x{rate / floor:4.2f} of the floor   cores busy {row['busy']:.2f}"
        )


def _median(rows: list[dict[str, float]]) -> dict[str, float]:
    """The run of median chunks/s (the lower middle one of an even count)."""
    return sorted(rows, key=lambda row: row["chunks/s"])[(len(rows) - 1) // 2]


def remote_round(args: argparse.Namespace, kb: Path, tmp: Path) -> dict[str, dict[str, float]]:
    from tests.support.embedding_server import EmbeddingServer

    knobs = {"latency_s": args.latency_ms / 1000, "capacity": args.capacity, "overflow": "wait"}
    tmp.mkdir()
    before = _archive(args.before, tmp)
    rows = {
        f"floor, {args.before}": in_child(before, kb, tmp / "hash-before", HASH),
        "hash floor": index(kb, tmp / "hash", HASH),
    }
    with EmbeddingServer(**knobs, dim=384) as s:
        for concurrency in (1, 4, 8):
            embedder = {
                "provider": "openai",
                "model": "bench",
                "dim": 384,
                "base_url": s.openai_url,
                "concurrency": concurrency,
            }
            rows[f"concurrency {concurrency}"] = index(kb, tmp / f"c{concurrency}", embedder)
            s.configure(**knobs, dim=384)  # its log starts again
            if concurrency == 4:
                work = tmp / "c4-before"
                rows[f"c4, {args.before}"] = in_child(before, kb, work, embedder)
                s.configure(**knobs, dim=384)
    return rows


def onnx(args: argparse.Namespace, kb: Path, tmp: Path) -> None:
    rows = {
        name: in_child(tree, kb, tmp / name, MINILM)
        for name, tree in (("before", _archive(args.before, tmp)), ("now", ROOT))
    }
    before, now = rows["before"], rows["now"]
    print(f"{args.docs} SciFact files, {now['chunks']:.0f} chunks, all-MiniLM-L6-v2 on ONNX")
    for name, row in rows.items():
        print(f"  {name:<7} {row['chunks/s']:7.1f} chunks/s ({row['seconds']:5.1f} s)", end="")
        print(f"   cores busy {row.get('busy', float('nan')):.2f}")
    print(f"  now: the embedding stage {now['embed s']:.1f} s of the {now['seconds']:.1f} s")
    print(f"  now / before: x{now['chunks/s'] / before['chunks/s']:.2f}  (before: {args.before})")


def _archive(revision: str, tmp: Path) -> Path:
    tree = tmp / "before-tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def main() -> None:
    if sys.argv[1:2] == ["_one"]:  # a child: one index with the tree of BENCH_TREE
        print(json.dumps(index(Path(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mode", choices=("remote", "onnx"))
    parser.add_argument("--docs", type=int, default=None, help="5183 remote, 2000 onnx")
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--capacity", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1, help="remote: rows run this many times")
    parser.add_argument("--before", default="526eb67", help="the code compared with")
    add_data_dir(parser)
    args = parser.parse_args()
    args.docs = args.docs or (5183 if args.mode == "remote" else 2000)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        kb = tmp / "kb"
        kb.mkdir()
        write_kb(kb, args.docs, args.data_dir)
        (remote if args.mode == "remote" else onnx)(args, kb, tmp)


if __name__ == "__main__":
    main()
