"""An upload request's files into the kb folder: every check first, then each file written atomically.

Nothing is written unless every file of the request passes (name, type, size, no clash unless
`overwrite`, disk room, a place in the indexing queue), so a refused request leaves the folder as
it was. Each original lands under its final name in one rename (rag_api.atomic): the watcher, a
`rag-hub check` or a reconcile never see half a file. Without `overwrite` an existing file is
never replaced, even one another process creates meanwhile (the final step is a hard link, which
fails rather than overwrite).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rag_api.atomic import copy_atomically
from rag_api.errors import (
    FileExists,
    InsufficientStorage,
    InvalidRequest,
    NoKbFolder,
    PayloadTooLarge,
)
from rag_api.indexing import kb
from rag_api.points.collection import Collection
from rag_api.settings import Settings
from rag_api.store.diskspace import MB, DiskSpace
from rag_api.uploads.names import clean_path, inside


@dataclass
class Incoming:
    """One file of the request, as the client named it."""

    filename: str | None
    stream: BinaryIO
    size: int


@dataclass
class Target:
    rel: str
    path: Path
    incoming: Incoming


def kb_root(collection: Collection) -> Path:
    """The collection's kb folder, which must exist (a missing one may be a disk not mounted)."""
    if collection.kb_path is None:
        raise NoKbFolder(
            f"collection '{collection.name}' has no kb folder (no `kb:` in collections.yaml): "
            "feed it through /v1/rag/add/document instead"
        )
    kb.require_folder(collection.kb_path)
    return collection.kb_path


def plan(
    collection: Collection,
    files: list[Incoming],
    folder: str | None,
    overwrite: bool,
    settings: Settings,
) -> list[Target]:
    """Where each file goes; every reason to refuse the request, before anything is written."""
    root = kb_root(collection)
    if not files:
        raise InvalidRequest("files: at least one file is required", param="files")
    if len(files) > settings.upload_max_files:
        raise PayloadTooLarge(
            f"{len(files)} files in one request; at most {settings.upload_max_files} "
            "(RAG_UPLOAD_MAX_FILES)"
        )
    targets: dict[str, Target] = {}
    for incoming in files:
        rel = clean_path(folder, incoming.filename)
        if rel in targets:
            raise InvalidRequest(f"'{rel}' is given twice in this request", param="files")
        if incoming.size > settings.max_file_bytes:
            raise PayloadTooLarge(
                f"'{rel}' has {incoming.size} bytes; a file may have at most "
                f"{settings.max_file_bytes} (RAG_MAX_FILE_BYTES)"
            )
        targets[rel] = Target(rel, _free_place(root, rel, overwrite), incoming)
    total = sum(t.incoming.size for t in targets.values())
    space = DiskSpace(root, settings.min_free_mb * MB)
    space.require(total, f"write {len(targets)} uploaded files into {root}")
    return list(targets.values())


def _free_place(root: Path, rel: str, overwrite: bool) -> Path:
    path = inside(root, rel)
    for parent in list(Path(rel).parents)[:-1]:
        if (root / parent).exists() and not (root / parent).is_dir():
            raise InvalidRequest(f"'{rel}': '{parent.as_posix()}' is a file, not a folder")
    if path.is_dir():
        raise InvalidRequest(f"'{rel}' is a folder of the kb")
    if path.exists() and not overwrite:
        raise FileExists(f"'{rel}' exists already; send overwrite=true to replace it")
    return path


def write(targets: list[Target], overwrite: bool) -> None:
    """Write every file; on a failure, remove the files this request created (a file it
    replaced keeps its new content: the folder is the truth, and it will be indexed)."""
    created: list[Path] = []
    try:
        for target in targets:
            existed = target.path.exists()
            target.path.parent.mkdir(parents=True, exist_ok=True)
            target.incoming.stream.seek(0)
            copy_atomically(target.path, target.incoming.stream, replace=overwrite)
            if not existed:
                created.append(target.path)
    except FileExistsError:
        _remove(created)
        raise FileExists(
            f"'{target.rel}' was created by someone else meanwhile; send overwrite=true to "
            "replace it"
        ) from None
    except OSError as exc:
        _remove(created)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientStorage(f"the kb folder's disk is full: {exc}") from exc
        raise


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
