"""One process at a time opens an embedded store: qdrant-edge's files are not safe to share. The
lock is an flock on `.lock` in the store's folder; the file names its holder, for the message the
next process gets."""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import IO

from rag_api.errors import StoreLocked

log = logging.getLogger("rag_api.store")


def acquire_process_lock(path: Path) -> IO[str]:
    """Lock `path` for this process (the open handle holds it), or raise StoreLocked naming the
    process that holds it."""
    handle = open(path, "a+")  # noqa: SIM115 - held open for the store's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "another process"
        handle.close()
        raise StoreLocked(
            f"the embedded store {path.parent} is in use by {owner} (a running `rag-hub serve`?); "
            "stop it, or make the change through its HTTP admin API (/v1/rag/*)"
        ) from None
    try:  # who holds the lock, for the message above; the flock alone is the lock
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
    except OSError as exc:
        log.debug("cannot record the owner in %s: %s", path, exc.strerror)
    return handle
