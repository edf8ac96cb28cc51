"""Folder indexer benchmarks, each against a baseline measured in the same run.

1. latency: a file write until its new text is queryable through a running Watcher, over N edits;
   baseline: the same edit applied by a direct `sync_collection(only=[file])` (the indexing work).
2. no-op reconcile: `sync_collection` of an unchanged 10,000-chunk collection (must embed nothing);
   baseline: reading every kb file once (the floor of any content-hash check).
3. incremental: one paragraph edited in a ~100-chunk document, chunks re-embedded (.md and .txt);
   baseline: the previous plain-text chunker (one SentenceSplitter pass over the whole text).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_indexer.py
    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_indexer.py --embedder hash --edits 20
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing import kb
from rag_api.indexing.chunking import _splitter, split_text
from rag_api.indexing.sync import stored_files, sync_collection
from rag_api.points.collection import Collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from rag_api.watcher import Watcher
from scripts.evallib import latency_summary
from scripts.evallib.hub import HASH, MINILM, written_settings
from scripts.evallib.paths import REPO
from scripts.evallib.stats import timed

EMBEDDERS = {"minilm": MINILM, "hash": HASH}
CHUNKING = {"size": 512, "overlap": 64}
WORDS = (
    "invoice refund shipping warranty account password backup export import printer "
    "receipt customer order payment discount tax report schedule contract support"
).split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="minilm")
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--debounce", type=float, default=Settings().watch_debounce_s)
    parser.add_argument("--chunks", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-indexer-") as tmp:
        base = Path(tmp)
        bench_latency(base / "latency", EMBEDDERS[args.embedder], args.edits, args.debounce)
        bench_noop_reconcile(base / "noop", args.chunks)
        bench_incremental(base / "incremental", EMBEDDERS[args.embedder])


# --- 1. write -> queryable ------------------------------------------------------------------


def bench_latency(base: Path, embedder: dict, edits: int, debounce: float) -> None:
    root = base / "kb"
    root.mkdir(parents=True)
    for path in (REPO / "kb" / "docs").iterdir():
        (root / path.name).write_bytes(path.read_bytes())
    target = root / "edited.md"
    paragraphs = prose_paragraphs(40)
    target.write_text(markdown_doc(paragraphs))
    hub = open_hub(base, root, embedder)
    collection = hub.collection("bench")
    sync_collection(collection)
    watcher = Watcher(hub, debounce_s=debounce, rescan_s=0).start()
    try:
        wait(lambda: idle(watcher))
        latencies = [timed_edit(collection, target, paragraphs, n, None) for n in range(edits)]
    finally:
        watcher.stop()
    direct = [timed_edit(collection, target, paragraphs, n, "direct") for n in range(edits)]
    hub.close()
    watched, synced = latency_summary(latencies), latency_summary(direct)
    print(
        f"\n1. file write -> queryable, {edits} edits, debounce {debounce:g} s, {embedder['model']}"
    )
    print(f"   watcher:     p50 {watched['p50_ms']:7.0f} ms   p95 {watched['p95_ms']:7.0f} ms")
    print(f"   direct sync: p50 {synced['p50_ms']:7.0f} ms   p95 {synced['p95_ms']:7.0f} ms")
    overhead = watched["p50_ms"] - synced["p50_ms"] - debounce * 1000
    print(
        f"   watcher p50 / (debounce + direct p50) = "
        f"{watched['p50_ms'] / (debounce * 1000 + synced['p50_ms']):.2f}; "
        f"overhead beyond both {overhead:.0f} ms"
    )


def timed_edit(
    collection: Collection, target: Path, paragraphs: list[str], n: int, mode: str | None
) -> float:
    """Edit one paragraph with a fresh marker word; seconds until a search finds it."""
    marker = f"marker{n}{'d' if mode else 'w'}"
    edited = list(paragraphs)
    edited[n % len(edited)] += f" Edited as {marker}."
    started = time.perf_counter()
    target.write_text(markdown_doc(edited))
    if mode == "direct":
        sync_collection(collection, only=[target.name])
    request = SearchRequest(marker, mode="sparse", top_k=1)
    wait(lambda: search(collection, request).passages, interval=0.002)
    return time.perf_counter() - started


# --- 2. no-op reconcile ---------------------------------------------------------------------


def bench_noop_reconcile(base: Path, chunks: int) -> None:
    root = base / "kb"
    root.mkdir(parents=True)
    per_file = 20
    rng = random.Random(0)
    for n in range(chunks // per_file):
        paragraphs = [
            " ".join(rng.choice(WORDS) for _ in range(55)) + f" doc{n}." for _ in range(per_file)
        ]
        (root / f"{n // 100:02}").mkdir(exist_ok=True)
        (root / f"{n // 100:02}" / f"doc{n:04}.txt").write_text("\n\n".join(paragraphs))
    hub = open_hub(base, root, EMBEDDERS["hash"])  # what embeds the chunks is beside the point
    collection = hub.collection("bench")
    built = sync_collection(collection)
    hub.store.optimize(collection.info(refresh=True).physical)
    runs = []
    for _ in range(5):
        report = sync_collection(collection)
        assert report.stats.embedded == 0 and report.indexed == 0, report.as_dict()
        runs.append(report.seconds)
    floor = min(time_read_all(root) for _ in range(5))
    scan = min(timed(lambda: kb.scan(root)) for _ in range(5))
    stored = min(timed(lambda: stored_files(collection)) for _ in range(5))
    hub.close()
    best, median = min(runs), statistics.median(runs)
    print(f"\n2. no-op reconcile of {built.stats.written} chunks in {built.files} files")
    print(f"   reconcile: best {best * 1000:.0f} ms, median {median * 1000:.0f} ms, 0 embedded")
    print(f"   parts: scan {scan * 1000:.0f} ms, stored-file scroll {stored * 1000:.0f} ms")
    print(f"   baseline (read every file once): {floor * 1000:.0f} ms; ratio {best / floor:.1f}x")


def time_read_all(root: Path) -> float:
    started = time.perf_counter()
    for path in root.rglob("*.txt"):
        path.read_bytes()
    return time.perf_counter() - started


# --- 3. incremental re-embedding ------------------------------------------------------------


def bench_incremental(base: Path, embedder: dict) -> None:
    root = base / "kb"
    root.mkdir(parents=True)
    text = shipped_prose()
    hub = open_hub(base, root, embedder)
    collection = hub.collection("bench")
    print("\n3. one paragraph edited in a ~100-chunk document: chunks re-embedded per edit")
    assert len(split_text(text, ChunkingConfig(**CHUNKING), markdown=True)) >= 100
    rng = random.Random(1)
    starts = [m.end() for m in re.finditer(r"\n\n(?=[A-Za-z¿¡])", text)]
    positions = rng.sample(starts, 20)
    for suffix in (".md", ".txt"):
        path = root / f"document{suffix}"
        path.write_text(text)
        chunks = sync_collection(collection, only=[path.name]).stats.written
        counts, old = [], []
        for start in positions:
            end = text.find("\n\n", start)
            edited = text[:end] + " An editor added this sentence to the paragraph." + text[end:]
            path.write_text(edited)
            counts.append(sync_collection(collection, only=[path.name]).stats.embedded)
            path.write_text(text)
            sync_collection(collection, only=[path.name])
            if suffix == ".txt":
                old.append(
                    changed_chunks(previous_text_chunker(text), previous_text_chunker(edited))
                )
        print(f"   {suffix:5} {chunks} chunks: {describe(counts)}")
        if old:
            ratio = statistics.mean(old) / statistics.mean(counts)
            print(f"   baseline, previous plain-text chunker: {describe(old)}; ratio {ratio:.1f}x")
    hub.close()


def previous_text_chunker(text: str) -> list[str]:
    """Chunker version 1 on plain text: one SentenceSplitter pass over the whole document."""
    splitter = _splitter(CHUNKING["size"], CHUNKING["overlap"])
    return [piece.strip() for piece in splitter.split_text(text.strip())]


def changed_chunks(before: list[str], after: list[str]) -> int:
    """Chunks of `after` whose text is new: what content-hash reuse has to embed."""
    known = set(before)
    return sum(1 for chunk in after if chunk not in known)


def describe(counts: list[int]) -> str:
    return (
        f"mean {statistics.mean(counts):.2f}, median {statistics.median(counts):g}, "
        f"max {max(counts)} over {len(counts)} edits"
    )


# --- helpers --------------------------------------------------------------------------------


def open_hub(base: Path, root: Path, embedder: dict) -> Hub:
    collection = {"kb": str(root), "embedder": embedder, "chunking": CHUNKING}
    hub = Hub.open(written_settings(base, {"bench": collection}))
    hub.load_models()
    return hub


def prose_paragraphs(count: int) -> list[str]:
    """Paragraphs of the shipped English kb, as realistic text."""
    text = (REPO / "kb" / "docs" / "product-faq.md").read_text()
    text += "\n\n" + (REPO / "kb" / "docs" / "internal-policies.md").read_text()
    paragraphs = [p for p in text.split("\n\n") if len(p) > 80 and not p.startswith("#")]
    return (paragraphs * (count // len(paragraphs) + 1))[:count]


def markdown_doc(paragraphs: list[str]) -> str:
    return "\n\n".join(
        (f"## Section {n // 3}\n\n" if n % 3 == 0 else "") + p for n, p in enumerate(paragraphs)
    )


def shipped_prose() -> str:
    """The shipped kb's markdown and text files (English and Spanish prose), concatenated."""
    sources = sorted(p for p in (REPO / "kb").rglob("*") if p.suffix in (".md", ".txt"))
    return "\n\n".join(p.read_text() for p in sources)


def idle(watcher: Watcher) -> bool:
    row = watcher.status()["collections"]["bench"]
    return row["queue"] == 0 and not row["reconcile_queued"] and not row["busy"]


def wait(predicate, timeout: float = 60.0, interval: float = 0.01):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            sys.exit("benchmark stalled: condition not met within a minute")
        time.sleep(interval)
    return value


if __name__ == "__main__":
    main()
