"""An embedded shard's search index built beside it, in a child process, then swapped in.

The engine holds the interpreter for the whole of a call, and an index build takes seconds (20k
chunks: 5–10 s): built in the server's process, every request of every collection waits for it.
Built aside, searches go on reading the shard as it was and writes go on into it; the writes
made meanwhile are replayed onto the copy (`replay`, from the shards' journal), and the swap
exchanges the two folders in one step (`renameat2(RENAME_EXCHANGE)`): at every instant the
shard's folder is one whole shard.

    python edge_optimize.py SHARD NICE    exit status 0, or EIO with the engine's message
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_api.store.edge_shards import Journal

# the engine's indexing threshold (10,000 KB of vectors): below it nothing is indexed and an
# optimization takes milliseconds, in place
INDEXED_FROM_BYTES = 10_000 * 1024
WORK = ".optimize"  # under the store's root: the copies being built (removed at open)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def build_index(folder: Path, nice: int, cancelled: threading.Event) -> None:
    """Build the index of the shard copy in `folder` in a child process `nice` levels down (this
    file run as a script: the standard library and the engine only); OSError when it fails,
    ECANCELED (the child stopped) once `cancelled` is set."""
    from rag_api.store.shard_copy import run_script  # here: the child imports no rag_api

    run_script(__file__, folder, str(folder), str(nice), stop=cancelled)


def replay(shard: Any, journal: Journal, start: int) -> int:
    """Apply the journal's writes from `start` on to `shard` (the engine's, a copy), in order;
    how many it holds now."""
    end = len(journal.writes)
    for method, args in journal.writes[start:end]:
        getattr(shard, method)(*args)
    return end


def exchange(first: Path, second: Path) -> None:
    """Swap two folders in one step; OSError where the system or filesystem cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    paths = (os.fsencode(first), os.fsencode(second))
    if renameat2(_AT_FDCWD, paths[0], _AT_FDCWD, paths[1], _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(first))


def _build(folder: str, nice: int) -> None:
    os.nice(nice)
    import qdrant_edge as qe

    shard = qe.EdgeShard.load(folder)
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()


if __name__ == "__main__":
    try:
        _build(sys.argv[1], int(sys.argv[2]))
    except BaseException as exc:  # the engine raises plain Exception with its message, or panics
        print(f"building the index aside: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(errno.EIO)
