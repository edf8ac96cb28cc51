"""Retention keeps the newest backup of each of the last N days and M weeks; `rag-hub check`
reports each collection's last backup and, past RAG_BACKUP_MAX_AGE_H, a finding."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.backup.retention import STAMP, list_backups, prune, retained
from rag_api.ops.backup.take import take_backup
from rag_api.ops.check.run import run_check
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source

TAKEN = [
    datetime(2025, 6, 10, 15, 30, tzinfo=UTC),  # Tuesday
    datetime(2025, 6, 10, 3, 30, tzinfo=UTC),
    datetime(2025, 6, 9, 3, 30, tzinfo=UTC),  # Monday: the week of the 10th
    datetime(2025, 6, 8, 3, 30, tzinfo=UTC),  # Sunday: the week before
    datetime(2025, 6, 7, 3, 30, tzinfo=UTC),
    datetime(2025, 6, 1, 3, 30, tzinfo=UTC),  # Sunday: two weeks before
    datetime(2025, 5, 25, 3, 30, tzinfo=UTC),
]


def test_the_newest_of_each_day_and_week_is_kept() -> None:
    assert retained(TAKEN, daily=3, weekly=2) == {TAKEN[0], TAKEN[2], TAKEN[3]}
    assert retained(TAKEN, daily=3, weekly=3) == {TAKEN[0], TAKEN[2], TAKEN[3], TAKEN[5]}
    assert retained(TAKEN, daily=0, weekly=0) == {TAKEN[0]}  # never none
    assert retained([], 3, 3) == set()


def test_prune_deletes_only_finished_backups_retention_drops(tmp_path: Path) -> None:
    for taken in TAKEN:
        folder = tmp_path / taken.strftime(STAMP)
        folder.mkdir()
        manifest = {"kind": fmt.KIND, "format": fmt.FORMAT, "taken_at": taken.isoformat(),
                    "collections": {}, "extra": {}}  # fmt: skip
        (folder / fmt.MANIFEST).write_text(json.dumps(fmt.seal(manifest)))
    (tmp_path / ".partial-20250611T033000Z").mkdir()  # a backup being written
    (tmp_path / "notes").mkdir()
    pruned = prune(tmp_path, daily=3, weekly=2)
    assert sorted(pruned) == sorted(t.strftime(STAMP) for t in (TAKEN[1], *TAKEN[4:]))
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == sorted(
        [
            ".partial-20250611T033000Z",
            "notes",
            *(t.strftime(STAMP) for t in TAKEN[:4] if t != TAKEN[1]),
        ]
    )
    assert [b.taken for b in list_backups(tmp_path)] == [TAKEN[3], TAKEN[2], TAKEN[0]]


def test_of_two_backups_in_one_second_only_the_newer_is_kept(tmp_path: Path) -> None:
    kept_stamp = TAKEN[2]  # retention keeps this one (see above), and it was taken twice
    names = [
        kept_stamp.strftime(STAMP),
        kept_stamp.strftime(STAMP) + "-2",
        TAKEN[0].strftime(STAMP),
    ]
    for name in names:
        (tmp_path / name).mkdir()
        taken = kept_stamp if name != names[2] else TAKEN[0]
        manifest = {"kind": fmt.KIND, "format": fmt.FORMAT, "taken_at": taken.isoformat(),
                    "collections": {}, "extra": {}}  # fmt: skip
        (tmp_path / name / fmt.MANIFEST).write_text(json.dumps(fmt.seal(manifest)))
    assert prune(tmp_path, daily=3, weekly=2) == [names[0]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[1:])


def test_check_reports_the_age_of_the_last_backup(tmp_path: Path, make_settings) -> None:
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(dim=32)})
    settings = make_settings(config, "edge", backup_max_age_h=24, backup_keep_daily=2)
    hub = Hub.open(settings)
    try:
        replace_source(hub.collection("docs"), "api/a", [Chunk("hello there", "api/a", 0)],
                       {"origin": "api", "persist": True})  # fmt: skip
        report = run_check(hub, sample=0)
        assert [f.check for f in report.results[0].findings] == ["backup"]
        assert "no backup in" in report.results[0].findings[0].detail and report.exit_code == 1

        result = take_backup(hub)  # into RAG_BACKUP_DIR (data/backups here)
        assert Path(result.path).parent == settings.backups_path
        document = run_check(hub, sample=0).as_dict()
        assert document["exit_code"] == 0
        last = document["collections"][0]["last_backup"]
        assert last["path"] == result.path and last["age_h"] < 0.1

        Path(result.path).rename(settings.backups_path / "20200101T000000Z")  # an old one
        report = run_check(hub, sample=0)
        assert report.exit_code == 1
        assert "the last backup is" in report.results[0].findings[0].detail
    finally:
        hub.close()
