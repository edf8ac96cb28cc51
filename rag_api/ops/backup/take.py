"""`rag-hub backup`: a consistent copy of collections into one backup folder (rag_api.ops.backup.file_format).

Consistent: each collection is read whole while its in-process writes are held (the gate a
migration's swap takes, `Collection.writes_held`): a write in progress finishes first, the next
waits, so the copy is a state the collection really had, each document in one version. Reads go
on meanwhile. The engine's records are read into memory under the hold; their points are built
and written to disk after it, so writes wait for the engine's scan only, never for the disk.
Inside the server the embedded shard is not read but flushed and copied under the hold (by the
kernel, holes kept), and a child process reads the copy and writes the file
(rag_api.ops.backup.writer): the server's requests never wait for its interpreter meanwhile.

Qdrant's own snapshots are not used: qdrant-edge can load a snapshot but not take one, and a
server's snapshot restores only into a server; this format restores on both engines.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_api import version
from rag_api.atomic import write_atomically
from rag_api.catalog import Catalog
from rag_api.errors import InsufficientStorage, RagError
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.backup.writer import write_aside
from rag_api.points.collection import Collection
from rag_api.store import PointData

log = logging.getLogger("rag_api.ops.backup.take")
PAGE = 512  # points read per engine call under the hold
# inside the server: smaller pages, as an engine call holds the interpreter throughout
SERVER_PAGE = 128
SCRATCH = ".backup-scratch"  # under RAG_DATA_DIR: shard copies a backup is reading
STAMP = "%Y%m%dT%H%M%SZ"
PARTIAL = ".partial-"


@dataclass
class CollectionCopy:
    """One collection as read under the hold: its points' pages (made into points when written,
    after the hold), or a copy of its embedded shard that the writer process reads."""

    header: fmt.Header
    pages: list[Sequence[PointData]]
    shard: Path | None = None


@dataclass
class BackupResult:
    path: str
    taken_at: str
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    held_s: dict[str, float] = field(default_factory=dict)  # how long each held its writes
    bytes: int = 0
    seconds: float = 0.0
    pruned: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_collection(
    collection: Collection, taken_at: str, page_size: int = PAGE, scratch: Path | None = None
) -> tuple[CollectionCopy, float]:
    """Every point of the collection in one state (its writes held meanwhile); how long they were.
    `scratch` (embedded store): copy the shard's folder there instead, for a writer process to
    read: the kernel copies it while this process's interpreter stays free for requests."""
    store = collection.store
    with collection.writes_held():
        held = time.monotonic()
        info = collection.info(refresh=True)
        pages: list[Sequence[PointData]] = []
        indexes: dict[str, str] = {}
        shard = None
        if info is not None:
            indexes = store.payload_indexes(info.physical)
            if scratch is not None:
                shard = scratch / info.physical
                store.copy_physical(info.physical, shard)
            else:
                pages = list(store.export(info.physical, page_size))
        cfg = collection.cfg
        held = time.monotonic() - held
    stored = collection.stored_embedder(info) if info is not None else None
    header = fmt.Header(
        collection=collection.name,
        physical=info.physical if info else None,
        dim=info.dim if info else cfg.embedder.dim,
        points=info.points if shard is not None else sum(map(len, pages)),  # the writer counts
        embedder=stored or cfg.embedder.id,
        config=cfg.model_dump(mode="json", exclude_defaults=True),
        payload_indexes=indexes,
        taken_at=taken_at,
    )
    return CollectionCopy(header, pages, shard), held


def take_backup(
    hub: Catalog, names: list[str] | None = None, to: Path | None = None, in_server: bool = False
) -> BackupResult:
    """Back up these collections (default: every configured one) into a new folder under `to`
    (default RAG_BACKUP_DIR); retention prunes that folder's older backups when `to` is unset.
    `in_server`: an embedded shard is copied under the hold rather than read, and each file is
    written by a child process at the idle priority (rag_api.ops.backup.writer)."""
    started = time.monotonic()
    chosen = (
        [hub.collection(n, enabled_only=False).name for n in names]
        if names
        else list(hub.collections)
    )
    root = Path(to) if to is not None else hub.settings.backups_path
    now = datetime.now(UTC)
    taken_at = now.isoformat(timespec="seconds")
    root.mkdir(parents=True, exist_ok=True)
    final = _free_name(root, now.strftime(STAMP))
    work = root / f"{PARTIAL}{final.name}"
    scratch = hub.settings.data_dir / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)  # what a killed backup left
    copies = scratch / final.name if in_server and hub.store.embedded else None
    result = BackupResult(str(final), taken_at)
    manifest: dict[str, Any] = {
        "kind": fmt.KIND, "format": fmt.FORMAT, "hub_version": version(),
        "taken_at": taken_at, "store": hub.store.location,
        "engine": "embedded" if hub.store.embedded else "server",
        "collections": {}, "extra": {},
    }  # fmt: skip
    try:
        work.mkdir()
        page_size = SERVER_PAGE if in_server else PAGE
        nice = hub.settings.batch_nice if in_server else None
        for name in chosen:
            copy, held = read_collection(hub.collections[name], taken_at, page_size, copies)
            result.held_s[name] = round(held, 4)
            try:
                entry = _write_collection(work, copy, nice)
            finally:  # one collection's copy on disk at a time
                if copy.shard is not None:
                    shutil.rmtree(copy.shard, ignore_errors=True)
            manifest["collections"][name] = entry
            result.collections[name] = entry
            log.info("%s: %d points backed up (writes held %.3f s)", name, entry["points"], held)
        manifest["extra"] = _copy_extra(hub.settings.data_dir, hub.settings.keys_path, work)
        write_atomically(work / fmt.MANIFEST, _json(fmt.seal(manifest)))
        _fsync_dir(work)
        os.rename(work, final)
        _fsync_dir(root)
    except BaseException as exc:
        shutil.rmtree(work, ignore_errors=True)  # never a partial backup left to be trusted
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientStorage(
                f"backup to {root} failed: the disk is full ({exc.strerror}); the partial backup "
                "was removed, the store is untouched"
            ) from exc
        if isinstance(exc, OSError):
            raise RagError(
                f"backup to {root} failed: {exc}; the partial backup was removed"
            ) from exc
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result.bytes = sum(e["bytes"] for e in manifest["collections"].values())
    if to is None:
        from rag_api.ops.backup.retention import prune

        keep = hub.settings
        result.pruned = prune(root, keep.backup_keep_daily, keep.backup_keep_weekly)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _write_collection(folder: Path, copy: CollectionCopy, nice: int | None) -> dict[str, Any]:
    """The collection's file, written here or (`nice` set) by a child process at that priority."""
    rel = fmt.collection_file(copy.header.collection)
    header = copy.header
    if nice is not None:
        entry = write_aside(folder / rel, header, copy.pages, nice, copy.shard)
    else:
        entry = fmt.write_points(folder / rel, header, copy.pages)
    return {"file": rel, **entry, "physical": header.physical, "embedder": header.embedder,
            "dim": header.dim}  # fmt: skip


def _copy_extra(data_dir: Path, keys: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """The upload jobs (RAG_DATA_DIR/jobs) and the scoped keys file (hashes only, kept 0600),
    copied as they are."""
    extra: dict[str, dict[str, Any]] = {}
    jobs = data_dir / "jobs"
    found = [(f"jobs/{p.relative_to(jobs).as_posix()}", p) for p in sorted(jobs.rglob("*"))]
    if keys.is_file():
        found.append((f"keys/{keys.name}", keys))
    for rel, path in found:
        if not path.is_file():
            continue
        target = folder / fmt.EXTRA / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(path.stat().st_mode & 0o777)
        extra[rel] = fmt.file_entry(target)
    return extra


def _free_name(root: Path, stamp: str) -> Path:
    path, n = root / stamp, 1
    while path.exists() or (root / f"{PARTIAL}{path.name}").exists():
        path, n = root / f"{stamp}-{n}", n + 1
    return path


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _json(document: dict[str, Any]) -> str:
    import json

    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
