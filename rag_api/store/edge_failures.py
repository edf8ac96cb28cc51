"""What qdrant-edge's failures mean to the hub: the engine raises plain exceptions carrying its
message, or panics; `engine_call` turns them into the hub's errors."""

from __future__ import annotations

import errno
import os

from rag_api.errors import InsufficientStorage, StoreCorrupted, StoreLocked, StoreUnavailable

# how the engine words a payload or log entry it cannot decode
_UNREADABLE = ("deserialize", "Payload storage is corrupted", "read WAL", "recursion limit")


def engine_failure(exc: BaseException) -> bool:
    """Whether the engine raised `exc`: an error, or a panic (pyo3 raises those as BaseException,
    which would otherwise pass every `except Exception` up to the server and kill it)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def unreadable(message: str) -> bool:
    """Whether an engine error says stored data cannot be decoded (rebuilding is the way out)."""
    return any(sign in message for sign in _UNREADABLE)


def engine_call(fn, *args):
    """`fn(*args)` on the engine, its failures raised as the hub's errors: a full disk, stored
    data it cannot decode (StoreCorrupted: a rebuild is the way out), anything else
    StoreUnavailable; a panic is caught like an error."""
    try:
        return fn(*args)
    except (StoreUnavailable, StoreLocked, InsufficientStorage):
        raise
    except BaseException as exc:  # the engine raises plain Exception with its message, or panics
        if not engine_failure(exc):
            raise
        if os.strerror(errno.ENOSPC) in str(exc):  # "No space left on device"
            raise InsufficientStorage(f"the embedded store's disk is full: {exc}") from exc
        if unreadable(str(exc)):
            raise StoreCorrupted(str(exc)) from exc
        raise StoreUnavailable("embedded Qdrant", str(exc)) from exc
