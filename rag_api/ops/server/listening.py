"""Where the server that owns the embedded store listens: recorded next to the store's lock at
start-up, read by CLI commands that find the store locked."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from rag_api.settings import Settings

log = logging.getLogger("rag_api.ops")
RECORD = "server.json"
WILDCARDS = {"", "0.0.0.0", "::", "[::]"}


def server_url(settings: Settings) -> str:
    """Where a server with these settings listens; a wildcard bind address is reached on loopback."""
    host = "127.0.0.1" if settings.host in WILDCARDS else settings.host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


def announce(settings: Settings) -> Path | None:
    """Record this process's address beside the embedded store's lock (None: no embedded store)."""
    if not settings.embedded:
        return None
    from rag_api.atomic import write_atomically

    path = settings.qdrant_path / RECORD
    try:
        write_atomically(path, json.dumps({"pid": os.getpid(), "url": server_url(settings)}))
    except OSError as exc:  # the CLI then looks at RAG_HOST / RAG_PORT, as before
        log.warning("cannot record where this server listens in %s: %s", path, exc)
        return None
    return path


def withdraw(path: Path | None) -> None:
    """Remove this process's record at shutdown (a newer server's record is left alone)."""
    if path is not None and _read(path).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def recorded_url(settings: Settings) -> str | None:
    """The address a live server recorded for this store, if any."""
    record = _read(settings.qdrant_path / RECORD)
    pid, url = record.get("pid"), record.get("url")
    if not isinstance(pid, int) or not isinstance(url, str):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a server that died without cleaning up
    except PermissionError:
        pass  # alive, run by another user
    return url


def _read(path: Path) -> dict:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
