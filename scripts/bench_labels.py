"""Chunk labels (issue 31): boilerplate kept out of the context without losing answers, and what
labelling costs, labels off and on in one run.

1. `furniture`: documents of a shared dataset (SciFact by default, its relevant documents kept)
   rendered as web pages (navigation menu, cookie banner, breadcrumbs, footer) and as PDF reports
   (a title page with a table of contents, a running header, page numbers), and as small web
   pages (`html-small`: the same furniture around the document's first sentences, up to
   SMALL_CHARS characters: a page that would be one chunk with its furniture), each corpus indexed
   through the kb folder sync (readers, chunking, labels: the product path). Every query is
   searched with labels off (every type, no minimum quality) and on (the collection's defaults):
   nDCG@10, and the share of boilerplate among the passages of a top_k 5 context. A passage is
   boilerplate when less than half of its letters are in lines of its document's own text.
2. `clean`: SciFact (1,500 documents), XQuAD-es and SQuAD-it (600 paragraphs) as plain text
   files, MiniLM: nDCG@10 off vs on, and how many chunks each minimum quality would hide.
3. `cost`: indexing chunks/s of `--cost-docs` web pages with labels, and with labelling replaced by a
   constant (the census and relabelling off too), alternating, fresh store each time.

    RAG_EVAL_DATA=../shared/eval-data PYTHONPATH=. .venv/bin/python scripts/bench_labels.py
    PYTHONPATH=. .venv/bin/python scripts/bench_labels.py --parts furniture --docs 200 --queries 50
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from scripts.evallib.paths import BENCH, MODEL_CACHE  # noqa: E402

# one ONNX export of the model for every fresh store of the run, not one inside each timing
os.environ.setdefault("RAG_MODEL_CACHE", str(MODEL_CACHE))

from rag_api import payload  # noqa: E402
from rag_api.indexing import ingest  # noqa: E402
from rag_api.indexing.sync import sync_collection  # noqa: E402
from rag_api.points import repetition  # noqa: E402
from rag_api.points.collection import Collection  # noqa: E402
from rag_api.points.labels import Label  # noqa: E402
from rag_api.search.retrieval import SearchRequest, search  # noqa: E402
from rag_api.store import Selector  # noqa: E402
from scripts.evallib import Dataset, chunks_to_docs, evaluate, load_dataset, parse_with_data  # noqa: E402
from scripts.evallib.furnished import normalised, write_corpus  # noqa: E402
from scripts.evallib.hub import MINILM, open_hub  # noqa: E402
from scripts.evallib.paired import paired_difference  # noqa: E402
from scripts.evallib.vector_cache import CachedQueries  # noqa: E402

OFF = {"types": tuple(payload.CHUNK_TYPES), "min_quality": 0.0}
QUALITIES = (0.2, 0.3, 0.4, 0.5)
# documents of each clean dataset (relevant ones kept): MiniLM for all three, since what is
# compared is one index with labels off and on, not the models
CLEAN = {"scifact": 1500, "xquad-es": None, "squad-it": 600}


def main() -> None:
    args = parse_args()
    if "furniture" in args.parts:
        dataset = load_dataset(
            args.dataset, args.data_dir, max_queries=args.queries, max_docs=args.docs
        )
    if "furniture" in args.parts:
        for kind in args.kinds:
            furniture(kind, dataset, args)
    if "clean" in args.parts:
        for name in args.clean:
            clean(name, args)
    if "cost" in args.parts:
        cost(args)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", choices=["furniture", "clean", "cost"],
                        default=["furniture", "clean", "cost"])  # fmt: skip
    parser.add_argument("--dataset", default="scifact", help="the furniture and cost corpus")
    parser.add_argument("--kinds", nargs="+", choices=["html", "html-small", "pdf"],
                        default=["html", "html-small", "pdf"],
                        help="furniture: the renderings indexed")  # fmt: skip
    parser.add_argument("--docs", type=int, default=1000, help="documents (relevant ones kept)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clean", nargs="+", choices=sorted(CLEAN), default=sorted(CLEAN))
    parser.add_argument("--rounds", type=int, default=2, help="cost: index runs of each variant")
    parser.add_argument("--show", type=int, default=0, help="print boilerplate left in contexts")
    parser.add_argument("--cost-docs", type=int, default=400, help="cost: documents indexed")
    parser.add_argument("--save", type=Path, help="furniture: each question's nDCG@10 saved here")
    parser.add_argument("--against", type=Path, help="furniture: compared with a --save folder")
    return parse_with_data(parser, BENCH)


# ---- the corpora --------------------------------------------------------------------------------


def is_boilerplate(text: str, own: str) -> bool:
    """Less than half of the passage's letters are in lines of the document's own text."""
    letters = inside = 0
    for line in text.splitlines():
        count = sum(ch.isalpha() for ch in line)
        letters += count
        key = normalised(line)
        inside += count if key and key in own else 0
    return inside < 0.5 * letters


# ---- the hub ------------------------------------------------------------------------------------


@contextmanager
def opened(root: Path, entry: dict[str, Any]) -> Iterator[Collection]:
    hub = open_hub(root, {"bench": entry}, data_dir=root / "data")
    try:
        yield hub.collection("bench")
    finally:
        hub.close()


def entry(kb: Path | None, language: str, embedder: dict[str, Any]) -> dict[str, Any]:
    return {
        "kb": str(kb) if kb else None,
        "language": language,
        "embedder": embedder,
        "retrieval": {"threshold": -1.0},  # rank everything: the metrics judge the order
        "llm": {"provider": "extractive"},
    }


def ranked(collection: Collection, query: str, top_k: int, filters: dict[str, Any]) -> list:
    return search(collection, SearchRequest(query, top_k=top_k, **filters)).passages


def ndcg(
    collection: Collection, dataset: Dataset, filters: dict[str, Any], doc_of: Callable
) -> float:
    return ndcg_by_query(collection, dataset, filters, doc_of)[0]


def ndcg_by_query(
    collection: Collection, dataset: Dataset, filters: dict[str, Any], doc_of: Callable
) -> tuple[float, dict[str, float]]:
    """nDCG@10: the mean, and each question's."""
    runs = {}
    for qid, text in dataset.queries.items():
        passages = [(p, -float(i)) for i, p in enumerate(ranked(collection, text, 100, filters))]
        runs[qid] = chunks_to_docs(passages, doc_of)
    result = evaluate(runs, dataset.qrels, ks=(10,))
    return result.mean["ndcg@10"], {q: v["ndcg@10"] for q, v in result.per_query.items()}


def furniture(kind: str, dataset: Dataset, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-labels-") as tmp:
        root = Path(tmp)
        own = write_corpus(kind, dataset, root / "kb")
        with opened(root, entry(root / "kb", dataset.language, MINILM)) as collection:
            started = time.perf_counter()
            report = sync_collection(collection)
            took = time.perf_counter() - started
            collection.embedders = CachedQueries(
                collection.embedders, args.cache_dir / "vectors", collection.cfg.embedder,
                list(dataset.queries.values()),
            )  # fmt: skip
            types = type_counts(collection)
            print(
                f"\n{kind}: {len(own)} {dataset.name} documents, {report.stats.written} chunks "
                f"indexed in {took:.0f} s; types {types}"
            )
            print(f"{'labels':<8}{'nDCG@10':>9}{'boilerplate in top 5':>26}")
            shares, scores = {}, {}
            for name, filters in (("off", OFF), ("on", {})):
                doc_of = lambda p: p.source.rsplit(".", 1)[0]  # noqa: E731
                score, scores[name] = ndcg_by_query(collection, dataset, filters, doc_of)
                context = [
                    is_boilerplate(p.text, own[p.source])
                    for text in dataset.queries.values()
                    for p in ranked(collection, text, 5, filters)
                ]
                shares[name] = sum(context) / max(1, len(context))
                counted = f"{shares[name]:.2%} ({sum(context)} of {len(context)})"
                print(f"{name:<8}{score:>9.4f}{counted:>26}")
            if not shares["off"]:
                print("boilerplate in context: none, labels off or on")
            else:
                ratio = shares["off"] / shares["on"] if shares["on"] else float("inf")
                print(f"boilerplate in context: {ratio:.1f}x less with labels")
            print(f"nDCG@10 on - off: {paired(scores['on'], scores['off'])}")
            compared(kind, scores, args)
            if args.show:
                show_left(collection, dataset, own, args.show)


def paired(first: dict[str, float], second: dict[str, float]) -> str:
    """The mean difference, its 95% paired-bootstrap interval, wins/losses and sign test p."""
    questions = sorted(first)
    return paired_difference(
        [first[q] for q in questions], [second[q] for q in questions]
    ).summary()


def compared(kind: str, scores: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    """Each question's nDCG@10 saved (--save), and this run against a saved one (--against): the
    same corpus and questions indexed by other code."""
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / f"{kind}.json").write_text(json.dumps(scores))
    if args.against and (args.against / f"{kind}.json").is_file():
        earlier = json.loads((args.against / f"{kind}.json").read_text())
        for name in ("off", "on"):
            print(f"nDCG@10 labels {name}, this run - saved: {paired(scores[name], earlier[name])}")


def show_left(collection: Collection, dataset: Dataset, own: dict[str, str], count: int) -> None:
    """Boilerplate passages that still reach a context with labels on, with their labels."""
    for text in dataset.queries.values():
        for p in ranked(collection, text, 5, {}):
            if count and is_boilerplate(p.text, own[p.source]):
                print(f"  left: {p.stored.labels()} {p.text[:300]!r}")
                count -= 1


def type_counts(collection: Collection) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in collection.records(Selector(), fields=[payload.TYPE]):
        kind = str(record.payload.get(payload.TYPE))
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def clean(name: str, args: argparse.Namespace) -> None:
    dataset = load_dataset(name, args.data_dir, max_docs=CLEAN[name])
    with tempfile.TemporaryDirectory(prefix="bench-labels-") as tmp:
        root = Path(tmp)
        kb = root / "kb"
        kb.mkdir()
        for doc_id, doc in dataset.corpus.items():
            (kb / f"{safe(doc_id)}.txt").write_text(doc.titled)
        with opened(root, entry(kb, dataset.language, MINILM)) as collection:
            report = sync_collection(collection)
            collection.embedders = CachedQueries(
                collection.embedders, args.cache_dir / "vectors", collection.cfg.embedder,
                list(dataset.queries.values()),
            )  # fmt: skip
            qualities = [
                float(r.payload.get(payload.QUALITY, 1.0))
                for r in collection.records(Selector(), fields=[payload.QUALITY])
            ]
            by_file = {f"{safe(d)}.txt": d for d in dataset.corpus}
            off = ndcg(collection, dataset, OFF, lambda p: by_file[p.source])
            on = ndcg(collection, dataset, {}, lambda p: by_file[p.source])
            hidden = {q: sum(v < q for v in qualities) for q in QUALITIES}
            print(
                f"\n{name}: {len(dataset.corpus)} docs, {report.stats.written} chunks, "
                f"{len(dataset.queries)} queries: nDCG@10 off {off:.4f}, on {on:.4f} "
                f"({on - off:+.4f}); chunks below min_quality "
                + ", ".join(f"{q}: {n}" for q, n in hidden.items())
            )


def safe(doc_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", doc_id)


def cost(args: argparse.Namespace) -> None:
    dataset = load_dataset(args.dataset, args.data_dir, max_docs=args.cost_docs)
    with tempfile.TemporaryDirectory(prefix="bench-labels-") as tmp:
        kb = Path(tmp) / "kb"
        write_corpus("html", dataset, kb)
        rates: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(args.rounds):
            for variant in ("without", "with"):
                rates[variant].append(index_rate(kb, Path(tmp) / variant, variant == "with"))
        without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
        print(
            f"\ncost: indexing {with_:.1f} chunks/s with labels vs {without:.1f} without "
            f"({with_ / without:.3f}x; runs {rates})"
        )


def index_rate(kb: Path, root: Path, labelled: bool) -> float:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with unlabelled(not labelled), opened(root, entry(kb, "en", MINILM)) as collection:
        started = time.perf_counter()
        report = sync_collection(collection)
        return report.stats.written / (time.perf_counter() - started)


@contextmanager
def unlabelled(active: bool) -> Iterator[None]:
    """Labelling replaced by a constant label, the census and relabelling skipped."""
    if not active:
        yield
        return
    saved = (ingest.chunk_label, repetition.Repetition.census, repetition.Repetition.written)
    ingest.chunk_label = lambda chunk, language, census, alone=None: Label("prose", 1.0)
    repetition.Repetition.census = lambda self, physical, language: repetition.Census()
    repetition.Repetition.written = lambda self, *args: None
    try:
        yield
    finally:
        ingest.chunk_label, repetition.Repetition.census, repetition.Repetition.written = saved


if __name__ == "__main__":
    sys.exit(main())
