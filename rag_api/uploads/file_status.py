"""A kb folder's files and their index state (GET /v1/collections/{c}/files).

The state compares the folder with the store the way sync_collection decides what to index: a
file is `indexed` when its chunks carry its current content hash (rag_api.indexing.kb.doc_hash) and all of
them are there, `stale` when the store holds another version (edited since, or chunks missing),
`pending` when the store holds none of it yet, and `failed` when the indexer could not read the
file as it is now (the reason: from the upload worker, the watcher in this process, or the
folder scan — too large, not a regular file). Content hashes are cached by (size, mtime, ctime):
a listing reads only the files that changed since the last one. Each file with labelled chunks
carries its quality summary (rag_api.indexing.file_quality).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_api.indexing import kb
from rag_api.indexing.chunking import reading_identity
from rag_api.indexing.file_quality import file_quality
from rag_api.indexing.sync import INCOMPLETE, file_inventory, ocr_options
from rag_api.points.collection import Collection

HASH_CACHE_FILES = 100_000


class FileFailures:
    """Files the upload worker could not index, with the reason, until they change."""

    def __init__(self) -> None:
        self._failed: dict[tuple[str, str], tuple[kb.Signature | None, str]] = {}
        self._lock = threading.Lock()

    def record(self, collection: str, path: Path, rel: str, reason: str) -> None:
        with self._lock:
            self._failed[(collection, rel)] = (kb.signature(path), reason)

    def forget(self, collection: str, rel: str) -> None:
        with self._lock:
            self._failed.pop((collection, rel), None)

    def reasons(self, collection: str, root: Path) -> dict[str, str]:
        """Reasons of the files that have not changed since they failed."""
        with self._lock:
            failed = {rel: v for (name, rel), v in self._failed.items() if name == collection}
        return {rel: why for rel, (sig, why) in failed.items() if sig == kb.signature(root / rel)}


class HashCache:
    """Content hashes of kb files by (path, signature, chunking, OCR setup)."""

    def __init__(self) -> None:
        self._hashes: dict[tuple[str, kb.Signature, Any, str], str] = {}
        self._lock = threading.Lock()

    def doc_hash(self, collection: Collection, item: kb.KbFile) -> str | None:
        sig = kb.signature(item.path)
        if sig is None:
            return None
        reading = reading_identity(item.path, ocr_options(collection))
        key = (str(item.path), sig, collection.cfg.chunking, reading)
        with self._lock:
            known = self._hashes.get(key)
        if known is not None:
            return known
        try:
            value = kb.doc_hash(item.path.read_bytes(), collection.cfg.chunking, reading)
        except OSError:
            return None
        with self._lock:
            if len(self._hashes) >= HASH_CACHE_FILES:
                self._hashes.clear()
            self._hashes[key] = value
        return value


def list_files(
    collection: Collection, max_bytes: int, hashes: HashCache, failed: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Every file of the kb folder the indexer looks at, sorted by path, with its state;
    `failed`: reasons the indexer gave for files as they are now."""
    assert collection.kb_path is not None
    files, skipped = kb.scan(collection.kb_path, max_bytes)
    stored = file_inventory(collection)
    quality = {rel: summary.view() for rel, summary in file_quality(collection).items()}
    rows = []
    for item in files:
        held = stored.get(item.rel)
        current = hashes.doc_hash(collection, item)
        reason = failed.get(item.rel)
        if reason is not None:
            state = "failed"
        elif held is None:
            state = "pending"
        elif current is not None and held.hashes == {current}:
            state = "indexed"
        else:
            state, reason = "stale", _stale_reason(held.hashes)
        row = _row(item.rel, item.path, state, held.chunks if held else 0, reason)
        rows.append(row | {"quality": quality.get(item.rel)})
    for rel, why in skipped.items():
        if why not in kb.QUIET_SKIPS:  # too large, not a regular file: a file the owner meant
            row = _row(rel, collection.kb_path / rel, "failed", 0, f"skipped: {why}")
            rows.append(row | {"quality": None})
    return sorted(rows, key=lambda row: row["path"])


def _stale_reason(hashes: set[str]) -> str:
    if INCOMPLETE in hashes:
        return "some of its chunks are missing (removed or moved through the API)"
    if len(hashes) > 1:
        return "its chunks hold more than one version (edited through the API)"
    return "the file changed since it was indexed"


def _row(rel: str, path: Path, state: str, chunks: int, reason: str | None) -> dict[str, Any]:
    try:
        info = path.stat()
        size, modified = info.st_size, datetime.fromtimestamp(info.st_mtime, UTC)
    except OSError:
        size, modified = 0, None
    return {
        "path": rel,
        "size": size,
        "modified": modified.isoformat(timespec="seconds") if modified else None,
        "state": state,
        "chunks": chunks,
        "reason": reason,
    }
