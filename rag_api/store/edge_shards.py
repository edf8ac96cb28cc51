"""The embedded store's open shards: one qdrant-edge shard per physical collection under a root,
opened at first use and reached only through `call`, under the guard that a replacement of a
shard's folder (an index built aside, a salvage) also holds: no call reaches a closed shard.

A shard copied to be indexed aside has its writes paused while it is copied, then journalled
(`Journal`) until the copy takes its place: they are replayed onto the copy first."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag_api.errors import StoreUnavailable
from rag_api.store.diskspace import DiskSpace
from rag_api.store.edge_failures import engine_call

CONFIG_FILE = "edge_config.json"
WRITES = frozenset({"update"})  # the engine calls that change a shard's points
KEPT = 64  # counts kept (kept()), the least recently asked dropped first


@dataclass
class Journal:
    """The writes made to a shard since its copy was taken, in order, for the copy; `cancelled`
    (why the copy must not replace the shard) is set when the shard is dropped or replaced, or
    a write fails half-way (the copy could not be made to match)."""

    writes: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    cancelled: threading.Event = field(default_factory=threading.Event)
    reason: str = ""

    def cancel(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.cancelled.set()


class Shards:
    def __init__(self, root: Path, disk: DiskSpace) -> None:
        self.root = root
        self.disk = disk
        self.guard = threading.RLock()
        self._resumed = threading.Condition(self.guard)
        self._paused: Counter[str] = Counter()  # pauses of a shard's writes, nested
        self._journals: dict[str, Journal] = {}
        self._open: dict[str, qe.EdgeShard] = {}
        self._configs: dict[str, dict[str, Any]] = {}
        self._changes: dict[str, int] = {}  # writes and folder replacements, per shard
        self._kept: OrderedDict[tuple[str, Hashable], tuple[int, Any]] = OrderedDict()

    def kept(self, physical: str, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()` (a read of `physical`'s points, named `key`), or what it gave last time if
        the shard has not changed since: a write or a replacement of its folder moves a count
        on, and this process is the shard's only writer (rag_api.store.process_lock). For the
        counts a status poll asks each time, each one call that holds the interpreter."""
        with self.guard:
            changes, entry = self._changes.get(physical, 0), (physical, key)
            kept = self._kept.get(entry)
            if kept is not None and kept[0] == changes:
                self._kept.move_to_end(entry)
                return kept[1]
            value = self._kept[entry] = (changes, compute())
            if len(self._kept) > KEPT:
                self._kept.popitem(last=False)
            return value[1]

    def _changed(self, physical: str) -> None:
        self._changes[physical] = self._changes.get(physical, 0) + 1

    def folder(self, physical: str) -> Path:
        if not physical or "/" in physical or physical.startswith("."):
            raise StoreUnavailable("embedded Qdrant", f"invalid collection name {physical!r}")
        return self.root / physical

    def names(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if (p / CONFIG_FILE).is_file())

    def call(self, physical: str, method: str, *args: Any) -> Any:
        """`method` of `physical`'s shard, as `engine_call` (the engine holds the interpreter for
        the whole call, so holding the guard meanwhile serialises nothing more)."""
        with self.guard:
            if method not in WRITES:
                return engine_call(getattr(self.shard(physical), method), *args)
            while self._paused[physical]:
                self._resumed.wait()  # the guard is free meanwhile
            self._changed(physical)  # before: a write that fails half-way changed it too
            journal = self._journals.get(physical)
            try:
                done = engine_call(getattr(self.shard(physical), method), *args)
            except BaseException:
                if journal is not None:
                    journal.cancel("a write failed while the index was built aside")
                raise
            if journal is not None:
                journal.writes.append((method, args))
            return done

    @contextmanager
    def journalled(self, physical: str) -> Iterator[Journal]:
        """`physical`'s writes recorded in the journal yielded until the block ends (begun while
        they are paused, the journal holds every write since the copy the caller took)."""
        with self.guard:
            if physical in self._journals:
                raise RuntimeError(f"'{physical}' is already journalled")
            journal = self._journals[physical] = Journal()
        try:
            yield journal
        finally:
            with self.guard:
                self._journals.pop(physical, None)

    @contextmanager
    def writes_paused(self, physical: str) -> Iterator[None]:
        """`physical`'s writes wait until the block ends; its reads go on."""
        with self.guard:
            self._paused[physical] += 1
        try:
            yield
        finally:
            with self.guard:
                self._paused -= Counter({physical: 1})
                self._resumed.notify_all()

    def cancel(self, physical: str, reason: str) -> None:
        """A copy of `physical` being built must not replace it (no-op when none is)."""
        with self.guard:
            journal = self._journals.get(physical)
            if journal is not None:
                journal.cancel(reason)

    def create(self, physical: str, config: qe.EdgeConfig) -> None:
        with self.guard:
            self._changed(physical)
            shard = engine_call(qe.EdgeShard.create, str(self.folder(physical)), config)
            self._open[physical] = shard

    def config(self, physical: str) -> dict[str, Any]:
        if physical not in self._configs:
            path = self.folder(physical) / CONFIG_FILE
            try:
                self._configs[physical] = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise StoreUnavailable("embedded Qdrant", f"cannot read {path}: {exc}") from exc
        return self._configs[physical]

    @contextmanager
    def closed(self, physical: str) -> Iterator[Path]:
        """`physical`'s shard closed, and no call made, while its folder (yielded) is replaced;
        the next call opens what the folder then holds."""
        with self.guard:
            self.cancel(physical, "the collection was dropped or replaced meanwhile")
            shard = self._open.pop(physical, None)
            if shard is not None:
                shard.close()
            try:
                yield self.folder(physical)
            finally:
                self._configs.pop(physical, None)
                self._changed(physical)

    def drop(self, physical: str) -> None:
        with self.closed(physical) as folder:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        with self.guard:
            for shard in self._open.values():
                shard.flush()
                shard.close()
            self._open.clear()

    def shard(self, physical: str) -> qe.EdgeShard:
        """The engine's shard, opened at first use; outside `call`, under `guard`."""
        shard = self._open.get(physical)
        if shard is not None:
            return shard
        folder = self.folder(physical)
        if not (folder / CONFIG_FILE).is_file():
            raise StoreUnavailable("embedded Qdrant", f"collection '{physical}' does not exist")
        self.disk.require_to_open(folder, physical)
        shard = self._open[physical] = engine_call(qe.EdgeShard.load, str(folder))
        return shard
