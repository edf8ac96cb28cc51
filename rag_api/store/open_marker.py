"""Unclean-shutdown markers: each open hub leaves a file in the data dir, a clean close removes it.

A marker whose process is gone means that process died with the store open, perhaps between the
two operations of a document replacement, so the next hub to open the store recovers first
(rag_api.points.generations). The embedded store is held by one process at a time (its folder lock):
any marker of it found at open is stale. A Qdrant server may be shared by several hubs: there a
marker is stale when its process is gone (pid and start time, so a reused pid does not count).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("rag_api.store.open_marker")
FOLDER = "open"  # under RAG_DATA_DIR


@dataclass
class OpenMarker:
    """This hub's marker; `stale` lists the markers of hubs that died with the same store open."""

    path: Path | None
    stale: list[Path]

    @classmethod
    def place(cls, data_dir: Path, location: str, exclusive: bool) -> OpenMarker:
        """Leave this hub's marker for the store at `location` (`exclusive`: the embedded one)."""
        if location == ":memory:":  # nothing of it outlives the process
            return cls(None, [])
        folder = data_dir / FOLDER
        try:
            stale = [p for p in folder.glob("*.json") if _stale(p, location, exclusive)]
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
            mark = {"pid": os.getpid(), "started": _started(os.getpid()), "store": location}
            path.write_text(json.dumps(mark), encoding="utf-8")
        except OSError as exc:
            log.warning("cannot keep an open marker in %s (%s): crashes go unnoticed", folder, exc)
            return cls(None, [])
        return cls(path, stale)

    def recovered(self) -> None:
        """The stale markers' store is whole again: forget them."""
        for path in self.stale:
            path.unlink(missing_ok=True)
        self.stale = []

    def remove(self) -> None:
        """A clean close."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def _stale(path: Path, location: str, exclusive: bool) -> bool:
    try:
        mark = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # another hub is writing its marker right now
    if not isinstance(mark, dict) or mark.get("store") != location:
        return False
    if exclusive:
        return True
    pid = mark.get("pid")
    return not isinstance(pid, int) or _started(pid) != mark.get("started")


def _started(pid: int) -> str | None:
    """When the process `pid` started (clock ticks since boot), None when there is none."""
    if not Path("/proc/self/stat").is_file():  # no procfs: whether it runs at all
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "running"
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # field 22: the name may hold spaces and ')'
