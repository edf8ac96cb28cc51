"""Where the benchmarks find the checkout, and where they keep what they build between runs."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / ".bench"  # git-ignored: indexes, vectors and stores kept between runs
MODEL_CACHE = BENCH / "models"  # the ONNX exports, made once across runs
