"""A full disk under RAG_DATA_DIR: writes are refused (507, CLI exit 1 with one line), reads go on
where the engine can, acknowledged writes survive, and no process dies of SIGBUS.

Runs on real small filesystems mounted for the test: a tmpfs and a loop-mounted ext4 image (the
two behave differently: tmpfs backs even a read of a mapped file's hole with memory)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import (
    assert_error_shape,
    free_port,
    hash_collection,
    run_cli,
    serve_process,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.slow
MB = 1024 * 1024
DISK_MB = 512  # room for a new collection (180 MB mapped, 48 MB of indexes) and the margin
MARGIN_MB = 64  # RAG_MIN_FREE_MB in these tests


class SmallDisk:
    """A filesystem of DISK_MB mounted at `path`; `leave(mb)` fills it up to `mb` free."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.filler = path / "filler"

    def free(self) -> int:
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def leave(self, mb: float) -> None:
        self.filler.unlink(missing_ok=True)
        with open(self.filler, "wb") as handle:
            os.posix_fallocate(handle.fileno(), 0, max(self.free() - int(mb * MB) - MB, 1))
            handle.seek(0, os.SEEK_END)
            try:  # the last MB a page at a time: a filesystem keeps some for its own bookkeeping
                while self.free() > mb * MB:
                    handle.write(b"\0" * 4096)
                    handle.flush()
            except OSError:  # full
                pass
        assert self.free() <= mb * MB

    def unfill(self) -> None:
        self.filler.unlink(missing_ok=True)


def _run(*command: str) -> str | None:
    """None when the command succeeded, else why not (one line)."""
    if shutil.which(command[0]) is None:
        return f"{command[0]} is not installed"
    done = subprocess.run(command, capture_output=True, text=True)
    return None if done.returncode == 0 else f"{' '.join(command)}: {done.stderr.strip()}"


@pytest.fixture(params=["tmpfs", "ext4"])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if request.param == "tmpfs":
        failed = _run("mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount))
    else:
        image = tmp_path / "disk.img"
        with open(image, "wb") as handle:
            handle.truncate(DISK_MB * MB)
        failed = _run("mkfs.ext4", "-q", "-F", "-m", "0", str(image)) or _run(
            "mount", "-o", "loop", str(image), str(mount)
        )
    if failed:
        pytest.skip(f"cannot mount a small {request.param}: {failed}")
    try:
        yield SmallDisk(mount, request.param)
    finally:
        if _run("umount", str(mount)):
            _run("umount", "-l", str(mount))


@pytest.fixture
def workspace(tmp_path: Path, small_disk: SmallDisk) -> dict[str, str]:
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(3):
        (kb / f"note{n}.md").write_text(f"# Note {n}\n\nRefunds take {n + 10} days to arrive.\n")
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})
    return {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(small_disk.path / "data"),
        "RAG_MIN_FREE_MB": str(MARGIN_MB),
    }


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """A domain error: exit 1 and one line on stderr, the last (after `index`'s progress bar);
    never a signal, never a traceback."""
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors == lines[-1:] and "Traceback" not in done.stderr, done.stderr[-2000:]
    return lines[-1]


def test_cli_refuses_what_does_not_fit_and_never_dies_of_sigbus(
    small_disk: SmallDisk, workspace: dict[str, str]
) -> None:
    small_disk.leave(8)
    refused = one_line_error(run_cli("index", env=workspace))
    assert "not enough free disk space to create collection 'docs__v1'" in refused
    assert f"RAG_MIN_FREE_MB={MARGIN_MB}" in refused
    check = run_cli("check", env=workspace)
    assert check.returncode == 1 and "store: error disk: not enough free disk" in check.stdout

    small_disk.unfill()
    assert run_cli("index", env=workspace).returncode == 0
    small_disk.leave(0)  # a full disk: writes are refused, reads go on where the engine can
    for args in (("collections",), ("query", "docs", "refunds", "--no-generate")):
        done = run_cli(*args, env=workspace)
        if small_disk.kind == "tmpfs":  # opening would fill the shard's holes: refused, no crash
            assert "to open collection 'docs__v1' on a RAM filesystem" in one_line_error(done)
        else:
            assert done.returncode == 0 and done.stdout.strip(), done.stderr
    assert "not enough free disk space" in one_line_error(
        run_cli("index", "--force", env=workspace)
    )

    small_disk.unfill()
    again = run_cli("query", "docs", "refunds", "--no-generate", "--json", env=workspace)
    assert again.returncode == 0 and "note" in again.stdout


class Server:
    """`rag-hub serve` on RAG_PORT in a subprocess: a crash kills it, not the test run."""

    def __init__(self, env: dict[str, str]) -> None:
        self.url = f"http://127.0.0.1:{env['RAG_PORT']}"
        self.process = serve_process(env)
        self.http = httpx.Client(base_url=self.url, timeout=60)
        wait_for(self._up, timeout=120)

    def _up(self) -> bool:
        assert self.process.poll() is None, f"the server exited with {self.process.returncode}"
        try:
            return self.http.get("/health").status_code == 200
        except httpx.TransportError:
            return False

    def add(self, source: str, text: str) -> httpx.Response:
        body = {"source": source, "text": text, "persist": True}
        return self.http.post("/v1/rag/add/document", json=body)

    def stop(self) -> int:
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)


@pytest.fixture
def start_server() -> Iterator:
    servers: list[Server] = []

    def start(env: dict[str, str]) -> Server:
        servers.append(Server(env))
        return servers[-1]

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(60)


def test_a_running_server_answers_507_and_keeps_every_acknowledged_write(
    small_disk: SmallDisk, workspace: dict[str, str], start_server
) -> None:
    workspace["RAG_PORT"] = str(free_port())  # where `rag-hub check` finds the server
    assert run_cli("index", env=workspace).returncode == 0
    server = start_server(workspace)
    assert server.http.get("/ready").status_code == 200
    assert server.add("first", "The first note was written with room to spare.").status_code == 200

    small_disk.leave(8)
    ready = assert_error_shape(server.http.get("/ready"), 503, "NOT_READY")
    assert ready["message"].startswith("not ready: disk: not enough free disk space")
    refused = server.add("second", "This note arrives on a full disk. " * 50)
    assert "MIN_FREE_MB" in assert_error_shape(refused, 507, "INSUFFICIENT_STORAGE")["message"]
    upsert = server.http.post("/v1/rag/upsert/document", json={"source": "first", "text": "x"})
    assert_error_shape(upsert, 507, "INSUFFICIENT_STORAGE")
    found = server.http.post("/query/docs", json={"query": "first note", "generate": False})
    assert found.status_code == 200 and found.json()["sources"], found.text
    check = run_cli("check", "--json", env=workspace)
    assert check.returncode == 1 and '"check": "disk"' in check.stdout
    assert server.process.poll() is None  # alive

    small_disk.unfill()
    assert server.http.get("/ready").status_code == 200
    assert (
        server.add("third", "The third note was written after space was freed.").status_code == 200
    )
    assert server.process.poll() is None
    server.stop()

    server = start_server(workspace)
    sources = server.http.get("/v1/rag/sources").json()["items"]
    names = {item["source"] for item in sources}
    assert {"first", "third"} <= names and "second" not in names
    first = server.http.get("/v1/rag/chunks", params={"source_exact": "first"}).json()["items"]
    assert first[0]["text"] == "The first note was written with room to spare."
