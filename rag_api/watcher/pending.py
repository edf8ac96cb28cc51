"""Changed paths of one kb folder, held until they are quiet: a save burst or a copy is indexed once."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BATCH_GRACE_S = 0.05
Stamp = tuple[int, int] | None  # (size, mtime_ns) of a file; None when it does not exist


@dataclass
class Work:
    """One sync: changed kb-relative paths, renames (new -> old), and whether to reconcile it all."""

    paths: set[str] = field(default_factory=set)
    renames: dict[str, str] = field(default_factory=dict)
    full: bool = False

    def __bool__(self) -> bool:
        return bool(self.paths or self.renames or self.full)


class Pending:
    """Paths that changed, each released once no event touched it for `quiet_s` and its size and
    mtime held still over that time (a writer that is still going is not read half-way)."""

    def __init__(
        self, root: Path, quiet_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.root = root
        self.quiet_s = quiet_s
        self.clock = clock
        self._changed: dict[str, tuple[float, Stamp]] = {}  # rel -> (last event, stamp then)
        self._renames: dict[str, str] = {}
        self._reconcile_at: float | None = None
        self._lock = threading.Lock()

    def touch(self, rel: str, now: float | None = None) -> None:
        """A file was created, written, deleted or had its attributes changed."""
        stamp = file_stamp(self.root / rel)
        with self._lock:
            self._changed[rel] = (self._now(now), stamp)

    def moved(self, src: str, dest: str, now: float | None = None) -> None:
        """A file was renamed: its chunks follow it, reusing their vectors."""
        with self._lock:
            origin = self._renames.pop(src, src)  # renamed twice before it was indexed
            if origin != dest:
                self._renames[dest] = origin
        self.touch(src, now)
        self.touch(dest, now)

    def request_reconcile(self, at_once: bool = False, now: float | None = None) -> None:
        """Compare the whole folder with the collection: at once, or when directory events settle."""
        at = -math.inf if at_once else self._now(now)
        with self._lock:
            if at_once or self._reconcile_at != -math.inf:  # a settling request waits longer
                self._reconcile_at = at

    def take(self, now: float | None = None) -> Work:
        """Remove and return what is due."""
        now = self._now(now)
        work = Work()
        with self._lock:
            quiet = [rel for rel, (at, _) in self._changed.items() if now - at >= self.quiet_s]
        for rel in quiet:
            stamp = file_stamp(self.root / rel)  # outside the lock: events keep flowing
            with self._lock:
                entry = self._changed.get(rel)
                if entry is None or now - entry[0] < self.quiet_s:
                    continue  # touched again meanwhile
                if entry[1] != stamp:
                    self._changed[rel] = (now, stamp)  # written without an event: wait again
                    continue
                del self._changed[rel]
                work.paths.add(rel)
        with self._lock:
            if self._reconcile_at is not None and now - self._reconcile_at >= self.quiet_s:
                work.full = True
                self._reconcile_at = None
                # a reconcile would drop a renamed file's old chunks before the rename reused
                # them: take every rename along, settled or not
                for dest, src in self._renames.items():
                    work.paths.update((dest, src))
                    self._changed.pop(dest, None)
                    self._changed.pop(src, None)
            for dest in [d for d in self._renames if d in work.paths]:
                work.renames[dest] = self._renames.pop(dest)
                work.paths.add(work.renames[dest])
        return work

    def restore(self, work: Work) -> None:
        """Queue failed work again, due at once; newer events on the same paths win."""
        stamps = {rel: file_stamp(self.root / rel) for rel in work.paths}
        with self._lock:
            for rel, stamp in stamps.items():
                self._changed.setdefault(rel, (-math.inf, stamp))
            for dest, src in work.renames.items():
                self._renames.setdefault(dest, src)
            if work.full:
                self._reconcile_at = -math.inf

    def waiting(self, rel: str) -> bool:
        """The path has changes that are not due yet."""
        with self._lock:
            return rel in self._changed

    def next_due(self) -> float | None:
        """When to look again (None when nothing is queued): once the earliest item is due, plus
        a moment, so that files saved together are taken together."""
        with self._lock:
            times = [at for at, _ in self._changed.values()]
            if self._reconcile_at is not None:
                times.append(self._reconcile_at)
        return min(times) + self.quiet_s + min(self.quiet_s, BATCH_GRACE_S) if times else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._changed)

    def _now(self, now: float | None) -> float:
        return self.clock() if now is None else now

    @property
    def reconcile_queued(self) -> bool:
        return self._reconcile_at is not None


def file_stamp(path: Path) -> Stamp:
    """Size and modification time of a file, None when it cannot be stat'ed."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns
