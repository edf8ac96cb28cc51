"""For the replicas' direct tests (tests/replicas): a Qdrant connection that can go down, a clock
the test moves, waiting on a condition, the operator's log lines, and a process that must exit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rag_api.errors import StoreUnavailable

ROOT = Path(__file__).resolve().parents[2]


class Outage:
    """A client call the way the store makes it, failing like an unreachable Qdrant while `down`."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise StoreUnavailable("Qdrant at qdrant.test", "connection refused")
        return fn(*args, **kwargs)


class Clock:
    """A writer's clock, moved by the test."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def until(found: Callable[[], bool], within: float = 5.0) -> bool:
    started = time.monotonic()
    while not found():
        if time.monotonic() - started > within:
            return False
        time.sleep(0.005)
    return True


def logged(caplog: pytest.LogCaptureFixture, opening: str) -> bool:
    """Whether a line the operator reads opens with these words."""
    return any(message.startswith(opening) for message in caplog.messages)


def exits(code: str, says: str) -> None:
    """Python `code` run in a process of its own prints `says` and the process exits (no thread
    of the project's keeps it alive)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    ended = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=20
    )
    assert ended.returncode == 0 and says in ended.stdout, ended.stderr
