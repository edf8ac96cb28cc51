"""A collection's kb folder: which files count, and their identity (path, size, content hash)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rag_api.config import ChunkingConfig
from rag_api.errors import KbFolderMissing
from rag_api.indexing.chunking import CHUNKER_VERSION, SPARSE_VERSION, SUFFIXES
from rag_api.points.labels import LABELS_VERSION
from rag_api.settings import DEFAULT_MAX_BYTES

# Skips that say something about the file's owner's intent (not a file meant for the index): not
# worth a log line, nor a row in a listing of the folder's files
QUIET_SKIPS = {"unsupported type", "editor swap/backup file", "generated ('_' prefix)"}
_BACKUP_SUFFIXES = (".swp", ".swo", ".swx", ".tmp", ".temp", ".bak", ".part", ".crdownload", "~")


@dataclass(frozen=True, slots=True)
class KbFile:
    rel: str  # POSIX path relative to the kb folder: the file's source name
    path: Path
    size: int
    mtime_ns: int = 0


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


def folder_problem(root: Path) -> str | None:
    """Why `root` cannot be listed as a kb folder ("kb folder missing: ..."); None when it can."""
    try:
        with os.scandir(root):
            return None
    except FileNotFoundError:
        why = "does not exist"
    except NotADirectoryError:
        why = "is not a directory"
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    return f"kb folder missing: {root} {why}"


def require_folder(root: Path) -> None:
    """Raise KbFolderMissing unless `root` can be listed: an absent folder is no evidence that
    its files were deleted (a typo in collections.yaml, a disk not mounted yet)."""
    problem = folder_problem(root)
    if problem is not None:
        raise KbFolderMissing(f"{problem}: nothing synced, no chunk deleted")


Signature = tuple[int, int, int]  # size, mtime, ctime: a chmod or any write changes it


def signature(path: Path) -> Signature | None:
    """What changes whenever the file does (None: it is gone): a file that failed is not
    retried, and a cached hash is reused, while this stays the same."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def scan(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[KbFile], dict[str, str]]:
    """Indexable files under `root` (sorted), and the skipped ones with the reason; a folder
    (or sub-folder) that cannot be listed raises KbFolderMissing rather than look empty."""
    files: list[KbFile] = []
    skipped: dict[str, str] = {}
    require_folder(root)
    for dirpath, dirnames, filenames in os.walk(root, onerror=_unlistable):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            _admit(root, Path(dirpath) / filename, max_bytes, files, skipped)
    return files, skipped


def stat_files(
    root: Path, rels: Iterable[str], max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[list[KbFile], dict[str, str]]:
    """The given kb-relative paths that are indexable files now (missing ones are left out),
    and the skipped ones with the reason: `scan` restricted to a few paths."""
    files: list[KbFile] = []
    skipped: dict[str, str] = {}
    require_folder(root)
    for rel in sorted(set(rels)):
        _admit(root, root / rel, max_bytes, files, skipped)
    return files, skipped


def _unlistable(exc: OSError) -> None:
    if isinstance(exc, FileNotFoundError):
        return  # a sub-folder removed while walking: its files are gone indeed
    why = exc.strerror or str(exc)
    raise KbFolderMissing(
        f"kb folder missing: {exc.filename} cannot be read ({why}): nothing synced, no chunk deleted"
    )


def _admit(
    root: Path, path: Path, max_bytes: int, files: list[KbFile], skipped: dict[str, str]
) -> None:
    rel = relative(root, path)
    reason = ignore_reason(rel)
    if reason is None:
        try:
            info = path.stat()
        except OSError:
            return  # gone between listing and stat
        if not stat.S_ISREG(info.st_mode):
            reason = "not a regular file"  # reading a FIFO or a device would block or never end
        elif info.st_size > max_bytes:
            reason = f"larger than the {max_bytes} byte limit ({info.st_size} bytes)"
        else:
            files.append(KbFile(rel, path, info.st_size, info.st_mtime_ns))
            return
    if reason != "hidden":
        skipped[rel] = reason


def doc_hash(data: bytes, chunking: ChunkingConfig, reading: str = "") -> str:
    """Identity of a file's points: its bytes, the chunking that cut them, the BM25 encoding of
    their terms, their labels' rules and, for files OCR reads, the OCR setup (`reading`,
    chunking.reading_identity); a new one re-indexes the file (its dense vectors are reused by
    content hash)."""
    version = f"v{CHUNKER_VERSION}.{SPARSE_VERSION}.{LABELS_VERSION}"
    head = f"{version}:{chunking.size}:{chunking.overlap}" + (f":{reading}" if reading else "")
    digest = hashlib.sha256(f"{head}\n".encode())
    digest.update(data)
    return digest.hexdigest()[:32]
