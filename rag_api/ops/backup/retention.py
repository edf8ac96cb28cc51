"""The backups in a folder: listing, the age of each collection's last one, and retention (keep the
newest backup of each of the last N days and of each of the last M weeks, delete the rest)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rag_api.errors import BackupInvalid
from rag_api.ops.backup.file_format import read_manifest
from rag_api.settings import Settings

STAMP = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class Listed:
    """A finished backup folder (its manifest read, checksums not verified)."""

    path: Path
    taken: datetime
    manifest: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """What the console shows of a collection's last backup."""
        return {"taken_at": self.manifest["taken_at"], "path": str(self.path)}

    def as_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "name": self.path.name,
            "path": str(self.path),
            "taken_at": self.manifest["taken_at"],
            "age_s": round((now - self.taken).total_seconds(), 1),
            "bytes": sum(e["bytes"] for e in self.manifest["collections"].values()),
            "collections": {n: e["points"] for n, e in self.manifest["collections"].items()},
        }


def stamp_of(name: str) -> datetime | None:
    """When a backup folder's name says it was taken (None: not a backup folder's name)."""
    try:
        return datetime.strptime(name.split("-")[0], STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


def list_backups(root: Path) -> list[Listed]:
    """The finished backups under `root`, oldest first; unfinished or unreadable ones are skipped."""
    found: list[Listed] = []
    if not root.is_dir():
        return found
    for path in root.iterdir():
        taken = stamp_of(path.name)
        if taken is None or not path.is_dir():
            continue
        try:
            found.append(Listed(path, taken, read_manifest(path)))
        except BackupInvalid:
            continue
    return sorted(found, key=lambda b: (b.taken, b.path.name))


def last_backups(root: Path) -> dict[str, Listed]:
    """The newest backup holding each collection."""
    return {name: b for b in list_backups(root) for name in b.manifest["collections"]}


def backup_age(settings: Settings, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """The newest backup of a collection in RAG_BACKUP_DIR (taken_at, age in hours, path), and
    a finding's detail when it is older than RAG_BACKUP_MAX_AGE_H, or missing (0: no finding)."""
    limit = settings.backup_max_age_h
    last = last_backups(settings.backups_path).get(name)
    if last is None:
        where = settings.backups_path
        return None, (f"no backup in {where} (RAG_BACKUP_MAX_AGE_H {limit:g})" if limit else None)
    age_h = (datetime.now(UTC) - last.taken).total_seconds() / 3600
    described = {
        "taken_at": last.manifest["taken_at"],
        "age_h": round(age_h, 2),
        "path": str(last.path),
    }
    if limit and age_h > limit:
        return described, (
            f"the last backup is {age_h:.1f} h old ({last.path.name}; RAG_BACKUP_MAX_AGE_H {limit:g})"
        )
    return described, None


def retained(stamps: list[datetime], daily: int, weekly: int) -> set[datetime]:
    """Which backups retention keeps: the newest of each of the `daily` most recent days that
    have one, and the newest of each of the `weekly` most recent ISO weeks that have one; the
    newest backup of all is always kept."""
    newest = sorted(stamps, reverse=True)
    keep: set[datetime] = set(newest[:1])
    for size, key in ((daily, _day), (weekly, _week)):
        seen: list[Any] = []
        for stamp in newest:
            period = key(stamp)
            if period in seen:
                continue
            if len(seen) >= size:
                break
            seen.append(period)
            keep.add(stamp)
    return keep


def _day(stamp: datetime) -> Any:
    return stamp.date()


def _week(stamp: datetime) -> Any:
    return stamp.isocalendar()[:2]


def prune(root: Path, daily: int, weekly: int) -> list[str]:
    """Delete the backups under `root` retention does not keep; returns their names. Backups of
    the last 24 hours are all kept (a manual one beside the nightly one is not deleted at once);
    folders that are not finished backups (other files, unfinished ones) are left alone."""
    backups = list_backups(root)
    keep = retained([b.taken for b in backups], daily, weekly)
    recent = datetime.now(UTC) - timedelta(hours=24)
    # two backups within one second share a stamp: the newer one stands for both
    by_stamp = {b.taken: b for b in backups}
    pruned = []
    for backup in backups:
        if backup.taken > recent or (backup.taken in keep and by_stamp[backup.taken] is backup):
            continue
        shutil.rmtree(backup.path, ignore_errors=True)
        pruned.append(backup.path.name)
    return pruned
