"""Dataset loaders and trec_eval-compatible IR metrics for the retrieval benchmarks
(and, in evallib.server, a hub server for the benchmarks that measure over HTTP)."""

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
    default_data_dir,
    distinct_questions,
    load_dataset,
    parse_with_data,
    subsample,
)

__all__ = [
    "DATASETS",
    "Dataset",
    "Doc",
    "Evaluation",
    "chunks_to_docs",
    "default_data_dir",
    "distinct_questions",
    "evaluate",
    "latency_summary",
    "load_dataset",
    "parse_with_data",
    "mrr_at_k",
    "ndcg_at_k",
    "rank",
    "recall_at_k",
    "subsample",
]
