"""A copy of an embedded shard's folder that another process can open (a backup reads it there):
the files' data extents only, copied in the kernel, their holes kept as holes. An engine file is
mostly preallocated space (32 MB pages, WAL segments): a plain copy writes every zero of it.

`copy_aside` copies in a child process (this file run as a script: the standard library only, so
it starts in milliseconds): a server's copying thread would wait for the interpreter after each
of its thousand system calls while requests hold it, the copy taking seconds instead of a tenth.

    python shard_copy.py SOURCE TARGET RESERVE    exit status 0, or the errno of the failure
                                                  (ENOSPC: less than the copy + RESERVE free)
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

STOP_POLL_S = 0.05  # how often a child that may be stopped is looked at


def copy_aside(source: Path, target: Path, reserve: int = 0) -> None:
    """`copy_folder` in a child process, refused (ENOSPC) unless the copy leaves `reserve` bytes
    free; a failure is raised here as an OSError with its errno and the child's message."""
    run_script(__file__, target, str(source), str(target), str(reserve))


def run_script(script: str, path: Path, *args: str, stop: threading.Event | None = None) -> None:
    """`script` (a file that imports only the standard library and the engine, so it starts in
    milliseconds) run with `args` in a child process; its failure raised as an OSError about
    `path` with the errno it exited with (EIO when none) and its last line on stderr. Once `stop`
    is set the child is killed (ECANCELED)."""
    command = [sys.executable, "-I", script, *args]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as child:
        while True:
            try:
                _, stderr = child.communicate(timeout=None if stop is None else STOP_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    child.kill()
                    child.communicate()
                    raise OSError(errno.ECANCELED, "cancelled", str(path)) from None
    if child.returncode:
        message = stderr.strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
        code = child.returncode if child.returncode in errno.errorcode else errno.EIO
        raise OSError(code, message[0], str(path))


def copy_folder(source: Path, target: Path) -> int:
    """Copy `source` into a new folder `target`; the bytes of data copied."""
    copied = 0
    for folder, _, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            copied += _copy_file(Path(folder, name), into / name)
    return copied


def _copy_file(source: Path, target: Path) -> int:
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        try:
            copied = _copy_extents(src.fileno(), dst.fileno(), size)
        except OSError:  # a filesystem without SEEK_DATA or copy_file_range: every byte
            src.seek(0)
            dst.seek(0)
            dst.truncate()
            shutil.copyfileobj(src, dst, 1 << 20)
            return size
        os.ftruncate(dst.fileno(), size)
    return copied


def _copy_extents(src: int, dst: int, size: int) -> int:
    copied = position = 0
    while position < size:
        try:
            start = os.lseek(src, position, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after `position`, only a hole to the end
                break
            raise
        end = os.lseek(src, start, os.SEEK_HOLE)
        offset = start
        while offset < end:
            step = os.copy_file_range(src, dst, end - offset, offset, offset)
            if step == 0:
                raise OSError(f"copy_file_range stopped at {offset} of {end}")
            offset += step
        copied += end - start
        position = end
    return copied


def _room(source: Path, target: Path, reserve: int) -> None:
    need = sum(
        os.stat(os.path.join(folder, name)).st_blocks * 512
        for folder, _, files in os.walk(source)
        for name in files
    )
    stats = os.statvfs(target.parent)
    free = stats.f_bavail * stats.f_frsize
    if free < need + reserve:
        mb = 1 << 20
        raise OSError(
            errno.ENOSPC,
            f"the copy needs {need // mb} MB plus {reserve // mb} MB kept free, and "
            f"{free // mb} MB are free under {target.parent}",
        )


if __name__ == "__main__":
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _room(source, target, int(sys.argv[3]))
        copy_folder(source, target)
    except OSError as exc:
        print(exc.strerror or exc, file=sys.stderr)
        sys.exit(exc.errno if exc.errno in errno.errorcode else errno.EIO)
