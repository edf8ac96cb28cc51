"""Free space under the embedded store: a write that may not fit is refused before the engine
runs, since a full disk under a mapped file is SIGBUS (docs/architecture.md, "store")."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from rag_api.errors import InsufficientStorage
from rag_api.store.types import PointData

MB = 1024 * 1024
NEW_SHARD_BYTES = 180 * MB  # what a new shard (a collection, a migration target) maps
POINT_FACTOR = 3  # bytes written per raw byte of a point (measured at most 2.0)
INDEX_BYTES = 8 * MB  # a payload index's files, plus 64 bytes per point below
SMALL_WRITE = 1 * MB  # a delete, an alias change, the engine's small structure files
_RAM_FILESYSTEMS = {"tmpfs", "ramfs", "shm"}  # back a read of a hole in a shared map with memory


def points_bytes(points: Sequence[PointData]) -> int:
    """What an upsert of `points` may add to the store."""
    raw = 0
    for point in points:
        sparse = len(point.sparse.indices) if point.sparse is not None else 0
        payload = json.dumps(point.payload, default=str)
        raw += 4 * len(point.dense) + 8 * sparse + len(payload) + 64
    return POINT_FACTOR * raw + SMALL_WRITE


def allocated_bytes(folder: Path) -> int:
    """Bytes the filesystem has allocated to the files under `folder`."""
    return sum(st.st_blocks * 512 for st in _stats(folder))


def unbacked_bytes(folder: Path) -> int:
    """Bytes the files under `folder` span but the filesystem has not allocated (their holes)."""
    return sum(max(0, st.st_size - st.st_blocks * 512) for st in _stats(folder))


class DiskSpace:
    """The free-space rule for one data folder: free >= what a write may need + the margin."""

    def __init__(self, root: Path, min_free_bytes: int) -> None:
        self.root = Path(root)
        self.min_free = min_free_bytes
        self.in_ram = filesystem_type(self.root) in _RAM_FILESYSTEMS

    def free(self) -> int:
        """Bytes an unprivileged write can still use on the folder's filesystem."""
        stats = os.statvfs(self.root)
        return stats.f_bavail * stats.f_frsize

    def require(self, need: int, doing: str) -> None:
        """Raise InsufficientStorage unless `need` bytes plus the margin are free."""
        free = self.free()
        if free < need + self.min_free:
            raise InsufficientStorage(
                f"not enough free disk space to {doing}: it may need {_mb(need)} MB plus "
                f"RAG_MIN_FREE_MB={_mb(self.min_free)}, and {_mb(free)} MB are free under "
                f"{self.root}; free some space (reads still work)"
            )

    def require_to_open(self, shard: Path, name: str) -> None:
        """On a RAM filesystem, refuse to open a shard whose holes would not fit (see above)."""
        if self.in_ram:
            self.require(unbacked_bytes(shard), f"open collection '{name}' on a RAM filesystem")

    def problem(self) -> InsufficientStorage | None:
        """Why writes are refused now (less than the margin free), or None."""
        try:
            self.require(0, "write")
        except InsufficientStorage as exc:
            return exc
        return None

    def status(self) -> dict[str, int]:
        return {"free_mb": _mb(self.free()), "min_free_mb": _mb(self.min_free)}


def filesystem_type(path: Path) -> str:
    """The type of the filesystem holding `path` (from /proc/self/mounts; "" when unknown)."""
    target = os.path.realpath(path)
    best, kind = "", ""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, fields[2]
    return kind


def _stats(folder: Path) -> list[os.stat_result]:
    stats = []
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                stats.append(os.stat(os.path.join(base, name)))
            except OSError:  # removed meanwhile
                continue
    return stats


def _mb(size: int) -> int:
    return -(-size // MB)  # rounded up: "0 MB free" only when nothing is
