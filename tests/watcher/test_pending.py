"""The debounce queue on real files, with explicit clocks: quiet, stable, renamed, restored."""

from __future__ import annotations

import os
from pathlib import Path

from rag_api.watcher.pending import BATCH_GRACE_S, Pending, Work

QUIET = 1.0


def test_a_path_is_due_once_quiet(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    (tmp_path / "a.md").write_text("one")
    pending.touch("a.md", now=10.0)
    pending.touch("a.md", now=10.5)  # a burst: the last event counts

    assert not pending.take(now=11.0) and pending.waiting("a.md")
    assert pending.next_due() == 10.5 + QUIET + BATCH_GRACE_S
    assert pending.take(now=11.5) == Work(paths={"a.md"})
    assert len(pending) == 0 and pending.next_due() is None


def test_a_file_that_changed_without_an_event_waits_again(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    path = tmp_path / "big.pdf"
    path.write_bytes(b"x" * 10)
    pending.touch("big.pdf", now=10.0)
    path.write_bytes(b"x" * 20)  # still being written (mmap, a network copy: no event seen)
    os.utime(path, ns=(1, 2))

    assert not pending.take(now=12.0)  # size/mtime moved since the event: not read half-way
    assert pending.take(now=12.5) == Work()  # re-armed at 12.0
    assert pending.take(now=13.0) == Work(paths={"big.pdf"})


def test_a_deleted_file_is_due_like_any_change(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    pending.touch("gone.md", now=0.0)
    assert pending.take(now=QUIET) == Work(paths={"gone.md"})


def test_renames_travel_with_their_new_name(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    (tmp_path / "c.md").write_text("text")
    pending.moved("a.md", "b.md", now=0.0)
    pending.moved("b.md", "c.md", now=0.1)  # renamed twice before it was indexed

    work = pending.take(now=2.0)
    assert work.renames == {"c.md": "a.md"}
    assert work.paths == {"a.md", "b.md", "c.md"}


def test_a_reconcile_takes_every_rename_along(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    pending.request_reconcile(now=0.0)
    pending.moved("old.md", "new.md", now=0.9)  # not quiet yet, but the reconcile is due

    work = pending.take(now=1.0)
    assert work.full and work.renames == {"new.md": "old.md"}
    assert not pending.waiting("new.md") and not pending.reconcile_queued


def test_reconcile_requests_settle_unless_wanted_at_once(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    pending.request_reconcile(now=0.0)
    pending.request_reconcile(now=0.8)  # another folder event: wait for quiet again
    assert not pending.take(now=1.5).full
    pending.request_reconcile(at_once=True)
    pending.request_reconcile(now=1.5)  # does not delay the one wanted at once
    assert pending.take(now=1.5).full


def test_failed_work_is_restored_due_at_once_and_newer_events_win(tmp_path: Path) -> None:
    pending = Pending(tmp_path, QUIET)
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "b.md").write_text("b")
    pending.touch("a.md", now=0.0)
    pending.touch("b.md", now=0.0)
    work = pending.take(now=1.0)
    pending.touch("b.md", now=1.5)  # edited again while the sync failed

    pending.restore(Work(paths=work.paths, renames={"x.md": "y.md"}, full=True))

    again = pending.take(now=1.6)
    assert again.paths == {"a.md", "x.md", "y.md"} and again.full
    assert pending.waiting("b.md")
