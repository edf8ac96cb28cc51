"""What the embedded engine maps and allocates on disk: the figures behind rag_api/store/diskspace.py.

In a fresh folder on the filesystem to measure (a tmpfs, an ext4 image, the real data disk), it
creates a shard, writes batches of points, optimizes and reopens it, printing for each step the
bytes the filesystem allocated (statvfs) and the bytes the shard's files span (their apparent size,
holes included), and the ratio of allocated bytes to the points' raw bytes. Compare the ratios
with diskspace.POINT_FACTOR and the mapped size with NEW_SHARD_BYTES.

    PYTHONPATH=. python scripts/probe_disk.py /mnt/small          # the folder must be empty
    PYTHONPATH=. python scripts/probe_disk.py /mnt/small --dim 1024 --text 2000
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from pathlib import Path

import numpy as np

from rag_api.store.diskspace import MB, filesystem_type
from rag_api.store.edge import EdgeStore
from rag_api.store.types import PointData, SparseVec


def used(root: Path) -> int:
    stats = os.statvfs(root)
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


def spanned(root: Path) -> int:
    return sum(os.stat(Path(base) / f).st_size for base, _, files in os.walk(root) for f in files)


def points(count: int, dim: int, text: int) -> tuple[list[PointData], int]:
    rng = np.random.default_rng()
    batch = [
        PointData(
            id=str(uuid.uuid4()),
            dense=rng.random(dim, dtype=np.float32),
            sparse=SparseVec(list(range(50)), [1.0] * 50),
            payload={"text": "x" * text, "source": f"s{n % 7}", "metadata": {"k": "v"}},
        )
        for n in range(count)
    ]
    raw = sum(4 * dim + 8 * 50 + len(json.dumps(p.payload)) for p in batch)
    return batch, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--text", type=int, default=500, help="characters of text per point")
    parser.add_argument("--batches", type=int, default=5, help="of 1,000 points")
    args = parser.parse_args()
    root = args.folder / "qdrant"
    print(f"{args.folder}: {filesystem_type(args.folder) or 'unknown'} filesystem")
    store = EdgeStore(root)
    before = used(args.folder)
    store.create_physical("probe__v1", args.dim)
    created = used(args.folder)
    print(
        f"new shard: {spanned(root) / MB:.1f} MB mapped, {(created - before) / MB:.1f} MB allocated"
    )
    raw = 0
    for _ in range(args.batches):
        batch, size = points(1000, args.dim, args.text)
        store.upsert("probe__v1", batch)
        raw += size
    wrote = used(args.folder)
    print(
        f"{args.batches * 1000} points: {raw / MB:.1f} MB raw, {(wrote - created) / MB:.1f} MB "
        f"allocated ({(wrote - created) / raw:.2f}x), {spanned(root) / MB:.1f} MB mapped"
    )
    store.optimize("probe__v1")
    optimized = used(args.folder)
    print(f"optimize: +{(optimized - wrote) / MB:.1f} MB allocated")
    store.close()
    closed = used(args.folder)
    store = EdgeStore(root)
    store.count("probe__v1")
    print(f"reopen: +{(used(args.folder) - closed) / MB:.1f} MB allocated")
    store.close()


if __name__ == "__main__":
    main()
