"""Ingest throughput: the hub's index path vs plain SentenceTransformer.encode on the same chunks.

Writes N SciFact abstracts as markdown files into a temporary kb folder, indexes them with the code
`rag-hub index` runs (sync_collection: read, chunk, hash, embed, BM25, upsert into embedded Qdrant),
then encodes exactly the chunk texts the hub produced with the bare model, in the same process.
Prints chunks/s of both and the ratio (target >= 0.95: the model is the cost, the hub adds little).

    python scripts/bench_ingest.py --docs 600
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_api.config import ChunkingConfig  # noqa: E402
from rag_api.indexing.chunking import split_text  # noqa: E402
from rag_api.indexing.sync import sync_collection  # noqa: E402
from scripts.evallib import add_data_dir, load_dataset  # noqa: E402
from scripts.evallib.hub import MINILM, open_hub  # noqa: E402


def write_kb(root: Path, docs: int, data_dir: Path) -> None:
    corpus = load_dataset("scifact", data_dir).corpus
    for n, (doc_id, doc) in enumerate(sorted(corpus.items())[:docs]):
        (root / f"{doc_id}.md").write_text(f"# {doc.title}\n\n{doc.text}\n", encoding="utf-8")
        if n + 1 >= docs:
            break


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=600, help="SciFact abstracts to index")
    add_data_dir(parser)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        kb.mkdir()
        write_kb(kb, args.docs, args.data_dir)
        entry = {"kb": str(kb), "embedder": MINILM, "chunking": {"size": 512, "overlap": 64}}
        warm_started = time.perf_counter()
        hub = open_hub(Path(tmp), {"bench": entry}, data_dir=Path(tmp) / "data")
        collection = hub.collection("bench")
        model = collection.embedders.get(collection.cfg.embedder)
        model.embed(["warm up the model and the tokenizer"] * 64)
        # one-time costs of a process, like the model load: llama-index and NLTK's sentence model
        split_text(
            "# Warm up\n\n" + "The splitter loads its sentence model once. " * 40, ChunkingConfig()
        )
        warm_seconds = time.perf_counter() - warm_started

        started = time.perf_counter()
        report = sync_collection(collection)
        hub_seconds = time.perf_counter() - started
        chunks = [
            r.payload["text"]
            for r in hub.store.iter_records(collection.info(refresh=True).physical)
        ]
        assert len(chunks) == report.stats.embedded, "every chunk should have been embedded once"

        started = time.perf_counter()
        model._model.encode(
            chunks, batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )
        raw_seconds = time.perf_counter() - started

        again = time.perf_counter()
        second = sync_collection(collection)
        noop_seconds = time.perf_counter() - again
        hub.close()

    hub_rate, raw_rate = len(chunks) / hub_seconds, len(chunks) / raw_seconds
    print(
        f"corpus: {args.docs} SciFact abstracts -> {len(chunks)} chunks of <= 512 chars (MiniLM, CPU)"
    )
    print(f"raw SentenceTransformer.encode : {raw_rate:7.1f} chunks/s ({raw_seconds:.1f} s)")
    print(f"hub index (sync_collection)    : {hub_rate:7.1f} chunks/s ({hub_seconds:.1f} s)")
    print(f"ratio hub/raw                  : {hub_rate / raw_rate:.3f}  (target >= 0.95)")
    print(
        f"re-index, nothing changed      : {second.stats.embedded} chunks embedded in {noop_seconds:.2f} s"
    )
    print(
        f"one-time per process, excluded : {warm_seconds:.1f} s (model load, splitter's sentence model)"
    )


if __name__ == "__main__":
    main()
