"""The systemd units: scripts/install-systemd.sh renders them idempotently and systemd accepts them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

INSTALLER = REPO / "scripts" / "install-systemd.sh"
UNITS = (
    "rag-hub.service",
    "rag-indexer.service",
    "rag-integrity.service",
    "rag-integrity.timer",
    "rag-backup.service",
    "rag-backup.timer",
)
PLACEHOLDER = re.compile(r"@[A-Z_]+@")

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (Debian package 'systemd'; .ci/run installs it)",
)


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    """A fake install dir: `systemd-analyze verify` wants ExecStart's binary to be executable."""
    exe = tmp_path / "opt" / "rag-hub" / ".venv" / "bin" / "rag-hub"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe.parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The installer's environment, with a throwaway HOME so --user never touches the real one."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    return env


def install(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        ["bash", str(INSTALLER), *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def snapshot(*dirs: Path) -> dict[Path, tuple[bytes, int]]:
    files = [p for d in dirs for p in sorted(d.rglob("*")) if p.is_file()]
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def verify(unit_dir: Path, tmp_path: Path, *, user: bool) -> None:
    """`systemd-analyze verify`: exit 0 and nothing said about our units.

    Container artefacts (no running systemd, no D-Bus) may show up as other output; lines that
    name our units are real findings (unknown keys, bad values, missing executables).
    """
    env = dict(os.environ)
    cmd = ["systemd-analyze", "verify"]
    if user:
        # The user manager needs a runtime dir; containers usually set no XDG_RUNTIME_DIR.
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        cmd = ["systemd-analyze", "--user", "verify"]
    paths = [str(unit_dir / unit) for unit in UNITS]
    proc = subprocess.run([*cmd, *paths], capture_output=True, text=True, env=env, timeout=120)
    output = proc.stdout + proc.stderr
    if user and "Failed to initialize manager" in output:
        # No user manager possible here: the user units are valid system units too (nothing in
        # them is user-only), so the system verifier still checks syntax and executables.
        proc = subprocess.run(
            ["systemd-analyze", "verify", *paths], capture_output=True, text=True, timeout=120
        )
        output = proc.stdout + proc.stderr
    about_us = [
        line
        for line in output.splitlines()
        if str(unit_dir) in line or any(unit in line for unit in UNITS)
    ]
    assert proc.returncode == 0, output
    assert about_us == [], output


def check_rendered(unit_dir: Path, prefix: Path) -> dict[str, str]:
    assert sorted(p.name for p in unit_dir.iterdir()) == sorted(UNITS)
    texts = {unit: (unit_dir / unit).read_text() for unit in UNITS}
    for unit, text in texts.items():
        assert not PLACEHOLDER.search(text), f"{unit}: {PLACEHOLDER.findall(text)}"
    assert f"ExecStart={prefix}/.venv/bin/rag-hub serve --watch\n" in texts["rag-hub.service"]
    assert f"ExecStart={prefix}/.venv/bin/rag-hub watch\n" in texts["rag-indexer.service"]
    integrity = texts["rag-integrity.service"]
    assert "Type=oneshot\n" in integrity
    assert "check --json --repair --output " in integrity
    # Exit 1 (problems found) must leave the unit failed.
    assert "\nSuccessExitStatus=" not in integrity
    assert "Unit=rag-integrity.service\n" in texts["rag-integrity.timer"]
    assert f"ExecStart={prefix}/.venv/bin/rag-hub backup --json\n" in texts["rag-backup.service"]
    assert "Unit=rag-backup.service\n" in texts["rag-backup.timer"]
    return texts


def test_help() -> None:
    proc = subprocess.run(["bash", str(INSTALLER), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "--dest DIR" in proc.stdout and "--user" in proc.stdout
    proc = subprocess.run(["bash", str(INSTALLER), "--bogus"], capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown option" in proc.stderr


@needs_systemd_analyze
@pytest.mark.parametrize("flavour", ["system", "user"])
def test_install_to_dest_is_idempotent_and_verifies(
    flavour: str, prefix: Path, env: dict[str, str], tmp_path: Path
) -> None:
    dest = tmp_path / "units"
    data = tmp_path / "data"
    args = ["--dest", str(dest), "--no-enable", "--prefix", str(prefix), "--data-dir", str(data)]
    if flavour == "user":
        args.append("--user")

    first = install(env, *args)
    assert "wrote:" in first
    before = snapshot(dest)
    second = install(env, *args)
    assert "Nothing to do" in second and "wrote:" not in second
    assert snapshot(dest) == before  # byte-identical and not even rewritten
    # --dest only writes units: no data dir, env file or account.
    assert not data.exists()
    assert not Path(env["HOME"], ".config").exists()

    texts = check_rendered(dest, prefix)
    hub = texts["rag-hub.service"]
    assert f"ReadWritePaths={data}\n" in hub
    if flavour == "system":
        assert "User=rag-hub\n" in hub and "Group=rag-hub\n" in hub
        assert "WantedBy=multi-user.target\n" in hub
        assert "EnvironmentFile=-/etc/rag-hub/rag-hub.env\n" in hub
    else:
        assert "\nUser=" not in hub and "\nGroup=" not in hub
        assert "WantedBy=default.target\n" in hub and "network-online" not in hub
    verify(dest, tmp_path, user=flavour == "user")


@needs_systemd_analyze
def test_user_install_writes_env_file_once(
    prefix: Path, env: dict[str, str], tmp_path: Path
) -> None:
    home = Path(env["HOME"])
    unit_dir = home / ".config" / "systemd" / "user"
    env_file = home / ".config" / "rag-hub" / "rag-hub.env"
    data = home / ".local" / "share" / "rag-hub"

    install(env, "--user", "--no-enable", "--prefix", str(prefix))
    assert data.is_dir()
    assert env_file.stat().st_mode & 0o077 == 0  # may hold API keys
    assert "#RAG_QDRANT_URL=" in env_file.read_text()
    texts = check_rendered(unit_dir, prefix)
    assert f"EnvironmentFile=-{env_file}\n" in texts["rag-hub.service"]

    env_file.write_text("RAG_API_KEY=secret\n")  # the operator's edits survive a re-run
    before = snapshot(home)
    assert "Nothing to do" in install(env, "--user", "--no-enable", "--prefix", str(prefix))
    assert snapshot(home) == before
    verify(unit_dir, tmp_path, user=True)
