"""`rag-hub` commands running in the background, their log lines read as they come."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

from tests.conftest import REPO, cli_env


class CliProcess:
    """`python -m rag_api ARGS` running in the background, its stderr collected line by line."""

    def __init__(self, *args: str, env: dict[str, str], prefix: Sequence[str] = ()) -> None:
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "rag_api", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(env),
            cwd=REPO,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def count(self, *parts: str) -> int:
        """Log lines containing every one of `parts`."""
        return sum(all(part in line for part in parts) for line in list(self.lines))

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout)
