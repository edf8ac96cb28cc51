"""A Git repository made by a test with the `git` CLI, and `git daemon` serving a folder of them
over git:// on loopback."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from tests.conftest import free_port

ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


class Repo:
    """A work tree whose commits the test makes: write, move, delete, commit."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "--quiet", "--initial-branch", branch)

    def git(self, *args: str) -> str:
        import os

        done = subprocess.run(
            ["git", "-C", str(self.path), *args],
            env={**os.environ, **ENV},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def write(self, files: dict[str, str]) -> Repo:
        for rel, text in files.items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return self

    def move(self, old: str, new: str) -> Repo:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)
        return self

    def delete(self, rel: str) -> Repo:
        self.git("rm", "--quiet", rel)
        return self

    def commit(self, message: str = "change") -> str:
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


class GitDaemon:
    """`git daemon` exporting every repository under `base` at git://127.0.0.1:PORT/<name>."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        self.url = f"git://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[Any] | None = None

    def __enter__(self) -> GitDaemon:
        self._process = subprocess.Popen(
            [
                "git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1",
                f"--port={self.port}", f"--base-path={self.base}", str(self.base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import socket

        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        assert self._process is not None
        self._process.terminate()
        self._process.wait(10)
