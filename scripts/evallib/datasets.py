"""Load the read-only evaluation datasets (see each PROVENANCE.md) into one in-memory shape, and
the benchmarks' options that name where they are."""

import argparse
import csv
import gzip
import json
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rag_api.config import ChunkingConfig
from rag_api.indexing.chunking import split_text
from scripts.evallib.paths import REPO

DATASETS = ("scifact", "xquad-es", "xquad-en", "squad-it")
_SQUAD_FILES = {
    "xquad-es": ("xquad/xquad.es.json", "es"),
    "xquad-en": ("xquad/xquad.en.json", "en"),
    "squad-it": ("squad-it/SQuAD_it-test.json.gz", "it"),
}


@dataclass(frozen=True)
class Doc:
    """One corpus document."""

    title: str
    text: str

    @property
    def titled(self) -> str:
        """The title, a blank line, the text: what the benchmarks index."""
        return f"{self.title}\n\n{self.text}"


@dataclass(frozen=True)
class Dataset:
    """A retrieval test collection: corpus, queries and graded relevance judgements."""

    name: str
    language: str
    corpus: dict[str, Doc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def default_data_dir() -> Path:
    """Return $RAG_EVAL_DATA, else ../shared/eval-data relative to the repo root."""
    return Path(os.environ.get("RAG_EVAL_DATA") or REPO.parent / "shared" / "eval-data")


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """Add --data-dir (default_data_dir()) to a benchmark's options."""
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())


def parse_with_data(parser: argparse.ArgumentParser, cache_dir: Path) -> argparse.Namespace:
    """Add --data-dir (default_data_dir()) and --cache-dir to a benchmark's options, parse them,
    and stop with a usage error when the data folder is missing."""
    add_data_dir(parser)
    parser.add_argument("--cache-dir", type=Path, default=cache_dir)
    args = parser.parse_args()
    if not args.data_dir.is_dir():
        parser.error(f"{args.data_dir} not found: pass --data-dir or set RAG_EVAL_DATA")
    return args


def load_dataset(
    name: str,
    data_dir: str | Path,
    split: str = "test",
    *,
    max_queries: int | None = None,
    max_docs: int | None = None,
    seed: int = 0,
) -> Dataset:
    """Load dataset `name` from `data_dir`, optionally subsampled (see `subsample`)."""
    data_dir = Path(data_dir)
    if name == "scifact":
        dataset = _load_beir(name, data_dir / "scifact", split, "en")
    elif name in _SQUAD_FILES:
        if split != "test":
            raise ValueError(f"{name} has only a 'test' split, not {split!r}")
        path, language = _SQUAD_FILES[name]
        dataset = _load_squad(name, data_dir / path, language)
    else:
        raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")
    return subsample(dataset, max_queries=max_queries, max_docs=max_docs, seed=seed)


def distinct_questions(data_dir: str | Path) -> list[str]:
    """Every SciFact question (its test and train splits, ~1,100), each text once, in a fixed
    order: latency benchmarks give each pass questions of its own, since the hub keeps recent
    query vectors (rag_api.embedding.query_vectors) and a repeated question is not embedded again."""
    seen: dict[str, None] = {}
    for split in ("test", "train"):
        for text in load_dataset("scifact", data_dir, split).queries.values():
            seen.setdefault(text.strip(), None)
    return list(seen)


def fresh_questions(
    data_dir: str | Path, passes: Iterable[str], warm_up: int, measured: int
) -> dict[str, tuple[list[str], list[str]]]:
    """(warm-up, measured) distinct_questions for each pass, no question in two passes; a usage
    error (SystemExit) names the most `measured` allows when there are too few."""
    questions, names = distinct_questions(data_dir), list(passes)
    size = warm_up + measured
    if len(questions) < size * len(names):
        raise SystemExit(f"--queries at most {len(questions) // len(names) - warm_up}")
    blocks = [questions[n * size : (n + 1) * size] for n in range(len(names))]
    return {
        name: (mine[:warm_up], mine[warm_up:]) for name, mine in zip(names, blocks, strict=True)
    }


def first_chunks(dataset: Dataset, count: int, chunking: ChunkingConfig | None = None) -> list[str]:
    """The documents (`Doc.titled`) split as the hub splits them (512/64 by default), in corpus
    order, until there are at least `count` chunks (the last document's are all kept)."""
    chunking = chunking or ChunkingConfig(size=512, overlap=64)
    chunks: list[str] = []
    for doc in dataset.corpus.values():
        chunks += split_text(doc.titled, chunking)
        if len(chunks) >= count:
            break
    return chunks


def squad_answers(name: str, data_dir: str | Path) -> dict[str, list[str]]:
    """Question id -> its gold answer texts, for a SQuAD-format dataset (xquad-*, squad-it)."""
    path, _ = _SQUAD_FILES[name]
    return {
        qa["id"]: [a["text"] for a in qa["answers"]]
        for article in _read_squad(Path(data_dir) / path)
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }


def subsample(
    dataset: Dataset, *, max_queries: int | None = None, max_docs: int | None = None, seed: int = 0
) -> Dataset:
    """Deterministically sample queries, then docs (always keeping the kept queries' relevant ones).

    A subsampled corpus has fewer distractors, so its scores are NOT comparable to published ones.
    If the relevant docs alone exceed `max_docs`, all of them are kept anyway.
    """
    rng = random.Random(seed)
    queries, qrels, corpus = dataset.queries, dataset.qrels, dataset.corpus
    if max_queries is not None and max_queries < len(queries):
        kept = set(rng.sample(sorted(queries), max_queries))
        queries = {qid: text for qid, text in queries.items() if qid in kept}
        qrels = {qid: rels for qid, rels in qrels.items() if qid in kept}
    if max_docs is not None and max_docs < len(corpus):
        relevant = {d for rels in qrels.values() for d, grade in rels.items() if grade > 0}
        rest = sorted(set(corpus) - relevant)
        kept = relevant | set(rng.sample(rest, max(0, min(len(rest), max_docs - len(relevant)))))
        corpus = {doc_id: doc for doc_id, doc in corpus.items() if doc_id in kept}
    return Dataset(dataset.name, dataset.language, corpus, queries, qrels)


def _load_beir(name: str, root: Path, split: str, language: str) -> Dataset:
    """Load a BEIR folder, keeping only the queries judged in qrels/<split>.tsv."""
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        if next(rows) != ["query-id", "corpus-id", "score"]:
            raise ValueError(f"{root}/qrels/{split}.tsv: unexpected header")
        for qid, doc_id, score in rows:
            qrels.setdefault(qid, {})[doc_id] = int(score)
    corpus = {
        o["_id"]: Doc(o.get("title", ""), o["text"]) for o in _read_jsonl(root / "corpus.jsonl")
    }
    queries = {
        o["_id"]: o["text"] for o in _read_jsonl(root / "queries.jsonl") if o["_id"] in qrels
    }
    if missing := set(qrels) - set(queries):
        raise ValueError(f"{root}: {len(missing)} judged queries missing from queries.jsonl")
    return Dataset(name, language, corpus, queries, qrels)


def _load_squad(name: str, path: Path, language: str) -> Dataset:
    """Convert SQuAD v1: paragraphs become untitled docs (identical texts merged), questions queries."""
    articles = _read_squad(path)
    doc_of_text: dict[str, str] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for a_idx, article in enumerate(articles):
        for p_idx, paragraph in enumerate(article["paragraphs"]):
            doc_id = doc_of_text.setdefault(paragraph["context"], f"{a_idx}-{p_idx}")
            for qa in paragraph["qas"]:
                queries[qa["id"]] = qa["question"]
                qrels[qa["id"]] = {doc_id: 1}
    corpus = {doc_id: Doc("", text) for text, doc_id in doc_of_text.items()}
    return Dataset(name, language, corpus, queries, qrels)


def _read_squad(path: Path) -> list[dict]:
    """The articles of a SQuAD v1 file (.json or .json.gz)."""
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        return json.load(f)["data"]


def _read_jsonl(path: Path) -> list[dict]:
    """Parse a JSON-lines file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
