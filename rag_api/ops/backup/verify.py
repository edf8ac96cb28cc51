"""`rag-hub check --verify-backups`: a collection's newest backup restored into a scratch store and
compared with what the backup holds (its point count, and a sample of payloads and vectors)."""

from __future__ import annotations

import math
import tempfile
from itertools import islice
from pathlib import Path

from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.retention import last_backups
from rag_api.store import PointData

SAMPLE = 16  # points compared whole, the first of the backup's file


def verify_last_backup(hub: Catalog, name: str) -> str | None:
    """Why `name`'s newest backup would not restore as it was taken, or None when it does."""
    last = last_backups(hub.settings.backups_path).get(name)
    if last is None:
        return f"no backup of '{name}' in {hub.settings.backups_path} to verify"
    with tempfile.TemporaryDirectory(prefix="rag-verify-") as tmp:
        scratch_settings = hub.settings.model_copy(
            update={"data_dir": Path(tmp), "qdrant_url": None, "backup_dir": None}
        )
        scratch = Catalog.open(scratch_settings)
        try:
            return _compare(scratch, last.path, name)
        except RagError as exc:
            return f"{last.path.name} does not restore: {exc.message}"
        finally:
            scratch.close()


def _compare(scratch: Catalog, path: Path, name: str) -> str | None:
    restore_backup(scratch, path, [name])
    entry = fmt.read_manifest(path)["collections"][name]
    header = fmt.read_header(path, name, entry)
    physical = scratch.store.alias_target(name)
    restored: dict[str, PointData] = {}
    if physical is not None:
        for page in scratch.store.export(physical):
            restored.update((p.id, p) for p in page)
    if len(restored) != entry["points"]:
        return f"{path.name}: {len(restored)} points restored of {entry['points']}"
    for point in islice(fmt.points_of(path, entry, header), SAMPLE):
        again = restored.get(point.id)
        if again is None or again.payload != point.payload or not _same(again.dense, point.dense):
            return f"{path.name}: point {point.id} restores differently"
    return None


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True)
    )
