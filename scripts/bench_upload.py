"""Upload API benchmark against a baseline measured in the same run, alternating round by round.

Measured: POST /v1/collections/{c}/files (multipart, over loopback HTTP) until GET /v1/jobs/{id}
says done; baseline: the same bytes written into the kb folder and indexed by a direct
`sync_collection(only=[file])` per file (the indexing work itself, what the watcher runs). The
difference is what the API adds: the request, the checks, the atomic write, the queue and the
job file's writes. Two sizes: one small markdown file, and the shipped kb (kb/docs, kb/soporte)
in one request. Each round uploads new names with a new marker, so nothing is reused.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_upload.py
    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_upload.py --embedder hash --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from scripts.evallib.hub import HASH, MINILM, written_settings
from scripts.evallib.paths import MODEL_CACHE, REPO
from scripts.evallib.server import app_server, free_port

EMBEDDERS = {"minilm": MINILM, "hash": HASH}
TYPES = {".md", ".txt", ".html"}  # not .jsonl: its lines name their own sources, shared by rounds
SMALL = "# Opening hours\n\nThe service desk answers from eight to six on weekdays ({marker}).\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="minilm")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    shipped = sorted(p for p in (REPO / "kb").rglob("*") if p.is_file() and p.suffix in TYPES)
    with tempfile.TemporaryDirectory(prefix="bench-upload-") as tmp:
        base = Path(tmp)
        kb = base / "kb"
        kb.mkdir()
        entry = {
            "kb": str(kb),
            "embedder": EMBEDDERS[args.embedder],
            "chunking": {"size": 512, "overlap": 64},
        }
        settings = written_settings(
            base, {"bench": entry}, port=free_port(), model_cache=MODEL_CACHE
        )
        hub = Hub.open(settings)
        hub.load_models()
        try:
            with app_server(settings, hub) as url, httpx.Client(base_url=url, timeout=600) as http:
                _warm(http, hub)
                one = [("one.md", lambda marker: SMALL.format(marker=marker).encode())]
                many = [(_flat(p), _marked(p.read_bytes())) for p in shipped]
                for label, files, rounds in (
                    ("one small .md file", one, args.rounds),
                    (f"the shipped kb, {len(many)} files in one request", many, 3),
                ):
                    _compare(label, http, hub, kb, files, rounds)
        finally:
            hub.close()


def _flat(path: Path) -> str:
    return path.relative_to(REPO / "kb").as_posix().replace("/", "-")


def _marked(data: bytes):
    """The file's bytes with a round's marker appended (new content, nothing reused)."""
    return lambda marker: data + f"\n\n{marker}\n".encode()


def _compare(label: str, http: httpx.Client, hub: Hub, kb: Path, files: list, rounds: int) -> None:
    api, direct = [], []
    for n in range(rounds):
        api.append(_by_api(http, files, f"a{n}"))
        direct.append(_direct(hub, kb, files, f"d{n}"))
    a, d = statistics.median(api), statistics.median(direct)
    print(f"\n{label} ({rounds} rounds, {hub.collection('bench').cfg.embedder.id})")
    print(f"   upload API until the job is done: median {a * 1000:8.1f} ms")
    print(f"   baseline, write + sync_collection: median {d * 1000:8.1f} ms")
    print(f"   ratio {a / d:.2f}x; the API adds {(a - d) * 1000:.1f} ms")


def _by_api(http: httpx.Client, files: list, tag: str) -> float:
    """Seconds from the request to the job's `finished_at` (the server's clock, which is this
    machine's): polled slowly, so the polling does not take CPU from the indexing it measures."""
    parts = [
        ("files", (f"{tag}-{name}", make(tag), "application/octet-stream")) for name, make in files
    ]
    started = time.time()
    answer = http.post("/v1/collections/bench/files", files=parts)
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    while True:
        time.sleep(0.05)
        job = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            break
    assert job["status"] == "done", job
    return datetime.fromisoformat(job["finished_at"]).timestamp() - started


def _direct(hub: Hub, kb: Path, files: list, tag: str) -> float:
    collection = hub.collection("bench")
    started = time.perf_counter()
    for name, make in files:
        (kb / f"{tag}-{name}").write_bytes(make(tag))
        report = sync_collection(collection, only=[f"{tag}-{name}"])
        assert report.indexed == 1, report.as_dict()
    return time.perf_counter() - started


def _warm(http: httpx.Client, hub: Hub) -> None:
    """One upload and one direct sync of each type first: models, store, connections and the
    readers' one-time costs (the plain-text splitter's first use takes seconds) on neither side."""
    text = SMALL.format(marker="warm").encode()
    files = [(f"warm{suffix}", lambda marker: text + marker.encode()) for suffix in sorted(TYPES)]
    _by_api(http, files, "warm-a")
    _direct(hub, hub.collection("bench").kb_path, files, "warm-d")


if __name__ == "__main__":
    main()
