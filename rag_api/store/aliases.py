"""The embedded store's alias table: hub name -> physical collection, in one file replaced atomically."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path


class AliasFile:
    """A small JSON map, rewritten whole through a temp file + fsync + rename: never half-written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cache: tuple[int, dict[str, str]] | None = None

    def read(self) -> dict[str, str]:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        cached = self._cache
        if cached is not None and cached[0] == stamp:
            return dict(cached[1])
        data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        self._cache = (stamp, data)
        return dict(data)

    def set(self, name: str, physical: str) -> None:
        with self._lock:
            data = self.read()
            data[name] = physical
            self._write(data)

    def remove(self, name: str) -> None:
        with self._lock:
            data = self.read()
            if data.pop(name, None) is not None:
                self._write(data)

    def _write(self, data: dict[str, str]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".aliases-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._cache = None
