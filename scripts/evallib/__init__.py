"""The benchmarks' harness: what each scripts/bench_*.py needs beside what it measures.

    datasets      the evaluation datasets (../shared/eval-data), their options and samples
    stats         latency percentiles and the machine line printed beside them
    hub           a benchmark's own hub: embedders, config, store, synthetic documents
    server        a hub server on loopback (child process or in-process thread), free ports,
                  its CPU so far
    client        the timed HTTP client
    baseline      another checkout's server beside this one (--baseline-tree), ratios
    bare_server   the HTTP floor: a bare uvicorn app
    load          load threads run for a while
    paired        paired bootstrap and sign test of two rankings
    extractive_baseline  the extractive answer's selection before issue 35 (bench_extractive)
    batch_floor   what query batching can save on this machine (bench_voice)
    furnished     documents as web pages and PDF reports with their furniture (bench_labels)
    vector_cache  dense vectors kept between runs

This package re-exports the dataset loaders and the trec_eval-compatible IR metrics.
"""

from rag_api.evaluation.scoring import (
    Evaluation,
    chunks_to_docs,
    evaluate,
    latency_summary,
    mrr_at_k,
    ndcg_at_k,
    rank,
    recall_at_k,
)
from scripts.evallib.datasets import (
    DATASETS,
    Dataset,
    Doc,
    add_data_dir,
    default_data_dir,
    distinct_questions,
    first_chunks,
    fresh_questions,
    load_dataset,
    parse_with_data,
    squad_answers,
    subsample,
)

__all__ = [
    "DATASETS",
    "Dataset",
    "Doc",
    "Evaluation",
    "add_data_dir",
    "chunks_to_docs",
    "default_data_dir",
    "distinct_questions",
    "evaluate",
    "first_chunks",
    "fresh_questions",
    "latency_summary",
    "load_dataset",
    "parse_with_data",
    "mrr_at_k",
    "ndcg_at_k",
    "rank",
    "recall_at_k",
    "squad_answers",
    "subsample",
]
