"""Bad files next to good ones under `serve --watch`: the good ones are indexed, each bad one is
logged once (not on every rescan), and a fixed file is picked up."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, hash_collection, wait_for, write_config

MAX_BYTES = 2000
BAD = {
    "undecodable.md": "undecodable bytes",
    "binary.txt": "binary content",
    "locked.md": "Permission denied",
}
SKIPPED = {"huge.md": "larger than the 2000 byte limit", "pipe.md": "not a regular file"}


def without_file_permissions_override() -> list[str]:
    """A command prefix under which chmod 000 really denies reading (root bypasses it)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def make_kb(kb: Path) -> None:
    kb.mkdir()
    (kb / "good.md").write_text("# Savanna\n\nZebras graze next to wildebeest.")
    lines = [
        json.dumps({"text": "Giraffes browse acacia leaves."}),
        '{"text": "broken line',
        json.dumps({"text": "Hippos wallow in rivers.", "source": "hippos"}),
    ]
    (kb / "notes.jsonl").write_text("\n".join(lines) + "\n")
    (kb / "undecodable.md").write_bytes(bytes(range(1, 32)) * 20 + b"\xff\xfe" * 50)
    (kb / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (kb / "locked.md").write_text("Lions rest in the shade.")
    (kb / "locked.md").chmod(0)
    (kb / "huge.md").write_text("Elephants. " * 400)
    os.mkfifo(kb / "pipe.md")


@pytest.mark.slow
def test_bad_files_are_logged_once_and_the_rest_goes_on(tmp_path: Path, spawn) -> None:
    prefix = without_file_permissions_override()
    kb = tmp_path / "kb"
    make_kb(kb)
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(kb)})
    port = free_port()
    env = {
        "RAG_CONFIG": str(config),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_WATCH_DEBOUNCE_S": "0.2",
        "RAG_WATCH_RESCAN_S": "0.3",
        "RAG_MAX_FILE_BYTES": str(MAX_BYTES),
    }
    server = spawn("serve", "--watch", "--port", str(port), env=env, prefix=prefix)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def status() -> dict | None:
        try:
            return client.get("/v1/indexer/status").json()["collections"]["notes"]
        except httpx.TransportError:
            return None

    row = wait_for(lambda: (s := status()) and s["counters"]["reconciles"] >= 4 and s, 60)
    assert row["files"] == 2 and row["queue"] == 0
    assert set(row["bad_files"]) == set(BAD)
    for name, reason in BAD.items():
        assert reason in row["bad_files"][name]
    assert {
        name: why[: len(SKIPPED[name])] for name, why in row["skipped_files"].items()
    } == SKIPPED

    def sources(word: str) -> set[str]:
        body = {"query": word, "generate": False, "mode": "sparse"}
        return {s["source"] for s in client.post("/query/notes", json=body).json()["sources"]}

    assert sources("zebras") == {"good.md"}
    assert sources("giraffes") == {"notes.jsonl#line1"} and sources("hippos") == {"hippos"}

    (kb / "vanishing.md").write_text("Meerkats stand guard.")  # gone before it is read
    (kb / "vanishing.md").unlink()
    (kb / "locked.md").chmod(0o644)  # fixed: picked up without a restart
    wait_for(lambda: "locked.md" not in status()["bad_files"])
    assert sources("lions") == {"locked.md"}
    reconciles = status()["counters"]["reconciles"]
    wait_for(lambda: status()["counters"]["reconciles"] >= reconciles + 2)

    assert server.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once shut down
    assert server.count("Application shutdown complete") == 1
    for name in [*BAD, *SKIPPED]:
        assert server.count("skipped", name) == 1, [line for line in server.lines if name in line]
    assert server.count("notes.jsonl: line 2: invalid JSON") == 1
    assert server.count("vanishing.md") == 0
