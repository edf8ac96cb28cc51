"""Real `rag-hub serve` processes forked from one that has imported the app already.

Crash tests kill a server and start it again dozens of times; importing the app takes seconds, a
fork of a process that has already imported it does not (gunicorn's preload). Each child runs the
very CLI entry point, `rag-hub serve --port PORT`, as a process of its own: SIGKILL ends it as it
would end the installed command. Nothing has started a thread when the fork happens.

`python -m tests.support.forkserver` is the forking side: for each line `serve PORT` on stdin it answers
the child's pid. `ForkServers` is the test's side.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import REPO, cli_env, free_port, wait_for


class ForkServers:
    """One server at a time, started in well under a second, SIGKILLed on demand."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        self._log_file = log.open("w")
        self.zygote = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            env=cli_env(env),
            cwd=REPO,
        )
        self.pid: int | None = None
        self.url = ""

    def start(self) -> str:
        """A fresh server on a free port, answering; returns its URL."""
        assert self.pid is None, "one server at a time: they share the data dir"
        port = free_port()
        assert self.zygote.stdin is not None and self.zygote.stdout is not None
        self.zygote.stdin.write(f"serve {port}\n")
        self.zygote.stdin.flush()
        self.pid = int(self.zygote.stdout.readline())
        self.url = f"http://127.0.0.1:{port}"
        wait_for(self._answers, timeout=60, interval=0.01)
        return self.url

    def _answers(self) -> bool:
        if not alive(self.pid):
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
            raise AssertionError(f"the server died at start-up:\n{tail}")
        try:
            return httpx.get(f"{self.url}/health", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        """SIGKILL the server and wait until it is gone (its store lock released)."""
        if self.pid is None:
            return
        os.kill(self.pid, signal.SIGKILL)
        wait_for(lambda: not alive(self.pid), timeout=30, interval=0.005)
        self.pid = None

    def close(self) -> None:
        self.kill()
        assert self.zygote.stdin is not None
        self.zygote.stdin.close()
        self.zygote.wait(30)
        self._log_file.close()


def alive(pid: int | None) -> bool:
    try:
        os.kill(pid or 0, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> None:
    import rag_api.http.app  # noqa: F401 - the imports every child shares
    from rag_api.cli import main as cli

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they die
    for line in sys.stdin:
        command, *args = line.split()
        if command != "serve":
            raise SystemExit(f"unknown command {command!r}")
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.dup2(2, 1)  # stdout carries pids: the server's own output goes to stderr
            threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()
            sys.argv = ["rag-hub", "serve", "--port", *args]
            try:
                cli.main()
            finally:
                os._exit(0)
        print(pid, flush=True)


def _orphaned(parent: int) -> None:
    """End this server once the forking process is gone (the test run ended or was killed)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


if __name__ == "__main__":
    main()
