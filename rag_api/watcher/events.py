"""watchdog events under one kb folder -> that collection's queue of changed paths."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

from rag_api.indexing import kb
from rag_api.watcher.pending import Pending

# What the watcher subscribes to. Opens and read-only closes are left out: reading a file to index
# it must not look like a change to it.
EVENT_TYPES = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileAttribEvent,  # chmod: an unreadable file may have become readable
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


class FolderEvents(FileSystemEventHandler):
    """Turns events under `root` into queued paths; directory changes ask for a reconcile."""

    def __init__(self, root: Path, pending: Pending, wake: Callable[[], None]) -> None:
        self.root = os.fspath(root)
        self.pending = pending
        self.wake = wake
        self.events = 0

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.events += 1
        if event.is_directory:
            # a folder that appears, goes or moves: its files' own events may be missing (a file
            # made right after its folder, a folder moved out of the tree), so compare it all
            if event.event_type != "modified":
                self.pending.request_reconcile()
        elif isinstance(event, FileMovedEvent):
            src, dest = self._rel(event.src_path), self._rel(event.dest_path)
            if src and dest:
                self.pending.moved(src, dest)
            elif src or dest:
                self.pending.touch(src or dest)  # moved in from outside / out to an ignored name
        else:
            rel = self._rel(event.src_path)
            if rel is None:
                return
            self.pending.touch(rel)
        self.wake()

    def _rel(self, path: bytes | str) -> str | None:
        """The kb-relative path of an indexable name, None for names outside or ignored."""
        rel = os.path.relpath(os.fsdecode(path), self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return None
        rel = Path(rel).as_posix()
        return rel if kb.ignore_reason(rel) is None else None
