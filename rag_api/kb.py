"""A collection's kb folder: which files count, and their identity (path, size, content hash)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rag_api.chunking import CHUNKER_VERSION, SUFFIXES
from rag_api.config import ChunkingConfig

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
_BACKUP_SUFFIXES = (".swp", ".swo", ".swx", ".tmp", ".temp", ".bak", ".part", ".crdownload", "~")


@dataclass(frozen=True, slots=True)
class KbFile:
    rel: str  # POSIX path relative to the kb folder: the file's source name
    path: Path
    size: int


def ignore_reason(rel: str) -> str | None:
    """Why a kb-relative path is not indexed (None = it is)."""
    parts = PurePosixPath(rel).parts
    if any(part.startswith(".") for part in parts):
        return "hidden"
    name = parts[-1]
    if name.startswith("_"):
        return "generated ('_' prefix)"
    if name.endswith(_BACKUP_SUFFIXES) or (name.startswith("#") and name.endswith("#")):
        return "editor swap/backup file"
    if PurePosixPath(name).suffix.lower() not in SUFFIXES:
        return "unsupported type"
    return None


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def scan(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[KbFile], dict[str, str]]:
    """Indexable files under `root` (sorted), and the skipped ones with the reason."""
    files: list[KbFile] = []
    skipped: dict[str, str] = {}
    if not root.is_dir():
        return files, skipped
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            rel = relative(root, path)
            reason = ignore_reason(rel)
            if reason is None:
                try:
                    info = path.stat()
                except OSError:
                    continue  # gone between listing and stat
                size = info.st_size
                if not stat.S_ISREG(info.st_mode):
                    # reading a FIFO blocks forever; a device never ends
                    skipped[rel] = "not a regular file"
                elif size > max_bytes:
                    skipped[rel] = f"larger than the {max_bytes} byte limit ({size} bytes)"
                else:
                    files.append(KbFile(rel, path, size))
            elif reason != "hidden":
                skipped[rel] = reason
    return files, skipped


def doc_hash(data: bytes, chunking: ChunkingConfig) -> str:
    """Identity of a file's chunks: its bytes and the chunking that cut them."""
    digest = hashlib.sha256(f"v{CHUNKER_VERSION}:{chunking.size}:{chunking.overlap}\n".encode())
    digest.update(data)
    return digest.hexdigest()[:32]
