"""Replacing a file so that readers see the old or the new content, never a half."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomically(path: Path, text: str, *, durable: bool = True) -> None:
    """Write `text` to a temp file beside `path`, fsync it, rename it over `path` (keeping the
    file's permissions; 0644 for a new one) and fsync the folder, so the rename survives a crash.
    `durable=False` skips both fsyncs (~10 ms each on a busy disk): readers still never see half a
    file, and only a crash of the machine itself (not of the process) can lose the write."""
    _write(path, lambda handle: handle.write(text.encode("utf-8")), replace=True, durable=durable)


def copy_atomically(path: Path, source: BinaryIO, *, replace: bool = True) -> None:
    """Copy the stream `source` into `path` the same way. With `replace=False` an existing `path`
    is never touched: FileExistsError, even when another process creates it meanwhile (the temp
    file is hard-linked into place, which fails rather than overwrite)."""
    _write(path, lambda handle: shutil.copyfileobj(source, handle, 1024 * 1024), replace=replace)


def _write(
    path: Path, fill: Callable[[BinaryIO], object], *, replace: bool, durable: bool = True
) -> None:
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    # a hidden temp name: the folder watcher ignores it, so only the finished file is indexed
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def publish_folder(folder: Path, fill: Callable[[Path], dict]) -> None:
    """Build a cache folder whole or not at all: `fill` fills a temporary folder beside `folder`
    and returns its manifest, written last as manifest.json; the folder is then renamed into
    place. If another process published it meanwhile, theirs is kept; a failure leaves nothing."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        manifest = fill(work)
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        try:
            os.rename(work, folder)
        except OSError:  # another process published it meanwhile
            if not (folder / "manifest.json").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
