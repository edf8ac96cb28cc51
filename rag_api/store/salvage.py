"""Rebuild an embedded shard that holds data the engine cannot read back: a fresh shard with every
readable point (the steps: docs/architecture.md, "store")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag_api.metadata import value_problem
from rag_api.store.edge_failures import engine_failure

BATCH = 256
CONFIG_FILE = "edge_config.json"


def rebuild_shard(folder: Path, work: Path) -> tuple[Path, int, list[str], bool]:
    """A readable copy of the shard in `folder`, built under `work` (created, must not exist):
    (its folder, points kept, ids dropped, whether the write-ahead log could be replayed)."""
    work.mkdir(parents=True)
    source, replayed = _open_readable(folder, work)
    target_dir = work / "rebuilt"
    target_dir.mkdir()
    shutil.copy2(folder / CONFIG_FILE, target_dir / CONFIG_FILE)
    target = qe.EdgeShard.load(str(target_dir))  # no segments yet: the persisted config decides
    kept, dropped = 0, []
    try:
        for field, index in source.info().payload_schema.items():
            target.update(qe.UpdateOperation.create_field_index(field, _schema(index)))
        for batch in _batches(_all_ids(source)):
            points = []
            for pid, record in _readable(source, batch):
                if record is None or value_problem(record.payload or {}) is not None:
                    dropped.append(str(pid))
                else:
                    points.append(qe.Point(record.id, record.vector or {}, record.payload or {}))
            if points:
                target.update(qe.UpdateOperation.upsert_points(points))
                kept += len(points)
        target.flush()
    finally:
        target.close()
        source.close()
    return target_dir, kept, dropped, replayed


def _open_readable(folder: Path, work: Path) -> tuple[Any, bool]:
    try:
        return qe.EdgeShard.load(str(folder)), True
    except BaseException as exc:
        if not engine_failure(exc):
            raise
    segments_only = work / "segments-only"
    shutil.copytree(folder, segments_only, ignore=shutil.ignore_patterns("wal"))
    return qe.EdgeShard.load(str(segments_only)), False


def _all_ids(shard: Any) -> list[Any]:
    ids, offset = [], None
    while True:
        request = qe.ScrollRequest(limit=BATCH, offset=offset, with_payload=False)
        records, offset = shard.scroll(request)
        ids += [r.id for r in records]
        if offset is None:
            return ids


def _batches(ids: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(ids), BATCH):
        yield ids[start : start + BATCH]


def _readable(shard: Any, ids: list[Any]) -> list[tuple[Any, Any]]:
    """(id, record) for each id; record None for the points whose payload cannot be decoded."""
    try:
        records = shard.retrieve(ids, True, True)
    except BaseException as exc:
        if not engine_failure(exc):
            raise
        if len(ids) == 1:
            return [(ids[0], None)]
        middle = len(ids) // 2
        return _readable(shard, ids[:middle]) + _readable(shard, ids[middle:])
    return [(r.id, r) for r in records]


def _schema(index: Any) -> Any:
    return index.params if index.params is not None else index.data_type
