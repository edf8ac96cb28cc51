"""A branch of a Git repository as a source (an https or ssh URL, or a local path), through the `git`
command: a bare mirror of its own is fetched, the branch's tree listed (`ls-tree`: each file's
blob, the version compared), and only new and changed blobs are read; the diff from the last
synced commit names the renames, whose vectors are reused. So a push of 3 files costs 3 files.
Credentials are git's own (an ssh agent, a credential helper); it never prompts."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from rag_api.config.sources import GitSource
from rag_api.errors import SourceUnavailable, redact
from rag_api.indexing.kb import QUIET_SKIPS, ignore_reason
from rag_api.sources.base import (
    Document,
    Item,
    Known,
    Skipped,
    Source,
    SourceContext,
    Unchanged,
)

FETCH_TIMEOUT_S = 1800.0
COMMAND_TIMEOUT_S = 300.0
SYNCED = "refs/rag-hub/synced"  # where the mirror keeps the fetched branch
ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never wait for a password on a terminal nobody watches
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


@dataclass(frozen=True)
class Blob:
    path: str
    sha: str
    size: int


class Repository(Source):
    cfg: GitSource

    def __init__(self, cfg: GitSource, context: SourceContext) -> None:
        super().__init__(cfg, context)
        self.where = f"git source '{cfg.name}' ({redact(cfg.repo)})"
        self.mirror = context.folder / "mirror.git"

    def scan(self, known: Mapping[str, Known]) -> Iterator[Item]:
        commit = self._fetch()
        files: list[Blob] = []
        for blob in self._tree(commit):
            reason = ignore_reason(blob.path)
            if reason is None and blob.size > self.context.max_bytes:
                reason = f"larger than the {self.context.max_bytes} byte limit ({blob.size} bytes)"
            if reason is None:
                files.append(blob)
            elif reason not in QUIET_SKIPS and reason != "hidden":
                yield Skipped(blob.path, reason)
        self.context.expect(len(files))
        renamed = self._renames(self.context.state.get("commit"), commit)
        wanted = []
        for blob in files:
            held = known.get(blob.path)
            if held is not None and dict(held.version) == {"blob": blob.sha}:
                yield Unchanged(blob.path)
            else:
                wanted.append(blob)
        for blob, data in zip(wanted, self._read(wanted), strict=True):
            yield Document(
                blob.path,
                data,
                PurePosixPath(blob.path).suffix.lower(),
                {"blob": blob.sha},
                url=self._link(commit, blob.path),
                renamed_from=renamed.get(blob.path),
            )
        self.context.state["commit"] = commit

    # --- git ---------------------------------------------------------------------------------

    def _fetch(self) -> str:
        """The branch's newest commit, fetched into the mirror."""
        if not (self.mirror / "HEAD").exists():
            self.mirror.parent.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", str(self.mirror), cwd=self.mirror.parent)
        ref = f"refs/heads/{self.cfg.branch}" if self.cfg.branch else "HEAD"
        self._git(
            "fetch", "--quiet", "--no-tags", "--force", self.cfg.repo, f"+{ref}:{SYNCED}",
            timeout=FETCH_TIMEOUT_S,
        )  # fmt: skip
        return self._git("rev-parse", "--verify", f"{SYNCED}^{{commit}}").strip()

    def _tree(self, commit: str) -> Iterator[Blob]:
        """The commit's files (blobs, no links or submodules) that the block's `paths` admit."""
        listing = self._git("ls-tree", "-r", "-z", "--long", "--full-tree", commit)
        for entry in filter(None, listing.split("\0")):
            meta, _, path = entry.partition("\t")
            mode, kind, sha, size = meta.split()
            if kind == "blob" and mode in ("100644", "100755") and self._admitted(path):
                yield Blob(path, sha, int(size))

    def _renames(self, before: str | None, after: str) -> dict[str, str]:
        """new path -> old path for the files moved between the last synced commit and this one
        (none when that commit is unknown here: a new mirror, a force-push)."""
        if not before or before == after or not self._has(before):
            return {}
        diff = self._git("diff", "--name-status", "-z", "-M", before, after)
        fields = diff.split("\0")
        moved: dict[str, str] = {}
        position = 0
        while position < len(fields) - 1:
            status = fields[position]
            if status.startswith(("R", "C")):
                old, new = fields[position + 1], fields[position + 2]
                if status.startswith("R") and self._admitted(new):
                    moved[new] = old
                position += 3
            else:
                position += 2
        return moved

    def _read(self, blobs: list[Blob]) -> Iterator[bytes]:
        """The blobs' bytes, in order, through one `git cat-file --batch`."""
        if not blobs:
            return
        process = subprocess.Popen(
            ["git", "-C", str(self.mirror), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            for blob in blobs:
                process.stdin.write(f"{blob.sha}\n".encode())
                process.stdin.flush()
                header = process.stdout.readline().decode().split()
                if len(header) != 3 or header[1] != "blob":
                    raise SourceUnavailable(self.where, f"cannot read {blob.path} ({header})")
                data = process.stdout.read(int(header[2]))
                process.stdout.read(1)  # the newline after each object
                yield data
        finally:
            process.stdin.close()
            process.kill()
            process.wait()

    def _has(self, commit: str) -> bool:
        try:
            self._git("cat-file", "-e", f"{commit}^{{commit}}")
        except SourceUnavailable:
            return False
        return True

    def _admitted(self, path: str) -> bool:
        return not self.cfg.paths or any(_glob(p).fullmatch(path) for p in self.cfg.paths)

    def _link(self, commit: str, path: str) -> str | None:
        template = self.cfg.link
        if not template:
            return None
        branch = self.cfg.branch or ""
        return template.format(commit=commit, path=quote(path), branch=quote(branch, safe=""))

    def _git(self, *args: str, cwd: Path | None = None, timeout: float = COMMAND_TIMEOUT_S) -> str:
        command = ["git", *(() if cwd else ("-C", str(self.mirror))), *args]
        try:
            done = subprocess.run(
                command, cwd=cwd, env=_env(), capture_output=True, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SourceUnavailable(self.where, f"git {args[0]}: {exc}") from exc
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
            raise SourceUnavailable(self.where, f"git {args[0]}: {lines[-1]}")
        return done.stdout.decode(errors="surrogateescape")


def _env() -> dict[str, str]:
    return {**os.environ, **ENV}


def _glob(pattern: str) -> re.Pattern[str]:
    """A `paths` glob as a regular expression: `**` spans folders, `*` and `?` stay in one; a
    pattern without a `/` matches a file's name in any folder."""
    if "/" not in pattern:
        pattern = f"**/{pattern}"
    out = []
    position = 0
    while position < len(pattern):
        if pattern.startswith("**/", position):
            out.append("(?:.*/)?")
            position += 3
        elif pattern.startswith("**", position):
            out.append(".*")
            position += 2
        elif pattern[position] == "*":
            out.append("[^/]*")
            position += 1
        elif pattern[position] == "?":
            out.append("[^/]")
            position += 1
        else:
            out.append(re.escape(pattern[position]))
            position += 1
    return re.compile("".join(out))
