"""The embedded store's alias table: hub name -> physical collection, in one file replaced atomically."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rag_api.atomic import write_atomically


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
        write_atomically(self.path, json.dumps(data, indent=2, sort_keys=True))
        self._cache = None
