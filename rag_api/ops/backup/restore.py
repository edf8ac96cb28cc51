"""`rag-hub restore`: a backup back into the store, as a migration lands (docs/operations.md).

The backup is verified whole first, by hashes and counts (rag_api.ops.backup.file_format.verify): a
corrupt or truncated one is refused before anything is touched. Each collection is then written
into a new physical collection (`name__v{n+1}`) beside the live one, its points decoded once as
they are written, its index built once after the last write (`Store.optimize`), counted, and
only then is the alias swapped, under the collection's write gate and with searches waiting for
the few ms of the swap. A restore that fails or is killed before the swap leaves the live
collection as it was (a half-written `name__vN` stays behind; `rag-hub migrate NAME --drop-old`
deletes it). The collection that was live stays too, as after a migration.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_api.catalog import Catalog
from rag_api.config import CollectionConfig
from rag_api.errors import BackupInvalid, EmbedderMismatch
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.migrate.run import exclusive, switch_embedder
from rag_api.ops.migrate.versions import EmbedderHistory, versions
from rag_api.store import Layout, PointData, Store, physical_name, version_of

log = logging.getLogger("rag_api.ops.backup.restore")
# points written per engine call: 2048 were no faster within the noise of a loaded machine (20k
# points: 2.8-3.4 s against 3.4-4.5 s) and hold the interpreter ~165 ms a call against ~32 ms
# (the engine's update keeps it throughout), which a restore inside the server makes every
# request wait for
BATCH = 256


@dataclass
class Restored:
    collection: str  # the hub name restored (the --as name, if given)
    source: str  # the collection's name in the backup
    live: str  # the physical collection now behind the name
    previous: str | None  # the one it replaced (kept)
    points: int
    embedder: str
    config_adopted: bool = False


@dataclass
class RestoreResult:
    backup: str
    taken_at: str
    restored: list[Restored] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backup": self.backup,
            "taken_at": self.taken_at,
            "restored": [r.__dict__ for r in self.restored],
            "seconds": self.seconds,
            "notes": self.notes,
        }


def restore_backup(
    hub: Catalog,
    path: Path,
    names: list[str] | None = None,
    as_name: str | None = None,
    adopt_config: bool = False,
) -> RestoreResult:
    """Restore these collections of the backup at `path` (default: every one it holds); `as_name`
    restores a single collection under another hub name, beside the original. `adopt_config`:
    a collection whose configured embedder differs from the backup's takes the backup's."""
    started = time.monotonic()
    path = Path(path)
    manifest = fmt.verify(path, names)  # before anything is touched
    chosen = names or sorted(manifest["collections"])
    if as_name is not None and len(chosen) != 1:
        raise BackupInvalid(
            f"--as names one collection: the backup holds {', '.join(chosen)}; choose one"
        )
    plans = []
    for name in chosen:
        entry = manifest["collections"][name]
        header = fmt.read_header(path, name, entry)
        target = as_name or name
        _check_embedder(hub, target, header, adopt_config)
        plans.append((name, entry, header, target))
    result = RestoreResult(str(path), manifest["taken_at"])
    for name, entry, header, target in plans:
        result.restored.append(_restore_one(hub, path, entry, header, target, adopt_config))
        if target not in hub.collections:
            result.notes.append(
                f"'{target}' is not in collections.yaml: it is in the store, but served only once "
                f"configured (the backup's block for '{name}' is in {path / entry['file']})"
            )
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _check_embedder(hub: Catalog, target: str, header: fmt.Header, adopt: bool) -> None:
    collection = hub.collections.get(target)
    if collection is None or adopt:
        return
    configured = collection.cfg.embedder
    if header.embedder != configured.id or header.dim != configured.dim:
        raise EmbedderMismatch(
            f"the backup of '{header.collection}' holds {header.embedder} vectors ({header.dim}d) "
            f"but collections.yaml configures {configured.id} ({configured.dim}d) for '{target}'; "
            "restore with --with-config to adopt the backup's embedder, or restore --as another name"
        )


def _restore_one(
    hub: Catalog, path: Path, entry: dict[str, Any], header: fmt.Header, target: str, adopt: bool
) -> Restored:
    store = hub.store
    collection = hub.collections.get(target)
    with exclusive(hub, target):  # no migration (or drop of old versions) meanwhile
        top = max([0, *map(version_of, versions(store, target))])
        live = store.alias_target(target)
        top = max(top, version_of(live) if live else 0)
        physical = physical_name(target, top + 1)
        cfg = CollectionConfig.model_validate(header.config)
        layout = Layout(cfg.qdrant.shard_number, cfg.qdrant.replication_factor)
        store.create_physical(physical, header.dim, layout)
        try:
            written = _load(store, physical, path, entry, header)
            store.ensure_payload_indexes(physical, header.payload_indexes)
            if written:
                store.optimize(physical)
            held = store.count(physical)
            if held != header.points:
                raise BackupInvalid(
                    f"{physical} holds {held} points after the restore, not {header.points}"
                )
        except BaseException:
            store.drop_physical(physical)  # the live collection was never touched
            raise
        live = collection.cfg.embedder if collection is not None else None
        other = live is not None and (header.embedder, header.dim) != (live.id, live.dim)
        adopted = adopt and other
        gate = collection.writes_held() if collection is not None else nullcontext()
        with gate:
            previous = store.alias_target(target)
            if collection is None:
                store.set_alias(target, physical)
            elif adopted:
                switch_embedder(hub, collection, cfg.embedder, physical)
            else:
                collection.switch(collection.cfg, physical)
        EmbedderHistory(hub.settings.data_dir, target).record(physical, cfg.embedder)
    log.info("%s: restored %d points into %s (was %s)", target, header.points, physical, previous)
    return Restored(target, header.collection, physical, previous, header.points, header.embedder,
                    bool(adopted))  # fmt: skip


def _load(
    store: Store, physical: str, path: Path, entry: dict[str, Any], header: fmt.Header
) -> int:
    batch: list[PointData] = []
    written = 0
    for point in fmt.points_of(path, entry, header):
        batch.append(point)
        if len(batch) >= BATCH:
            store.upsert(physical, batch)
            written += len(batch)
            batch = []
    store.upsert(physical, batch)
    return written + len(batch)
