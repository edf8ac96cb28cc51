"""Real file events on a tmp kb folder -> query results follow, within a bounded wait."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.conftest import wait_for
from tests.watcher.conftest import counters, found, settled, stop, waiting_in


def test_create_modify_delete(kb_dir: Path, start_watcher) -> None:
    watcher = start_watcher(kb_dir)
    wait_for(lambda: settled(watcher))

    (kb_dir / "fruit.md").write_text("# Fruit\n\nApples grow in the orchard.")
    wait_for(lambda: found(watcher, "apples") == {"fruit.md"})
    (kb_dir / "fruit.md").write_text("# Fruit\n\nBananas grow in the plantation.")
    wait_for(lambda: found(watcher, "bananas") == {"fruit.md"})
    assert found(watcher, "apples") == set()
    (kb_dir / "fruit.md").unlink()
    wait_for(lambda: found(watcher, "bananas") == set())

    row = watcher.status()["collections"]["notes"]
    assert row["files"] == 0 and row["last_error"] is None
    assert row["counters"]["files_indexed"] == 2 and row["counters"]["files_removed"] == 1


def test_rename_moves_chunks_without_embedding(kb_dir: Path, start_watcher) -> None:
    (kb_dir / "old.md").write_text("# Tides\n\nThe moon pulls the oceans twice a day.")
    watcher = start_watcher(kb_dir)
    wait_for(lambda: found(watcher, "moon") == {"old.md"})
    wait_for(lambda: settled(watcher))  # the counters are a sync's, kept once it ends
    embedded = counters(watcher)["chunks_embedded"]

    (kb_dir / "old.md").rename(kb_dir / "new.md")

    wait_for(lambda: found(watcher, "moon") == {"new.md"})
    wait_for(lambda: settled(watcher))
    assert counters(watcher)["chunks_embedded"] == embedded
    assert counters(watcher)["chunks_reused"] >= 1


def test_new_nested_folder_and_folder_moves(kb_dir: Path, start_watcher, tmp_path: Path) -> None:
    watcher = start_watcher(kb_dir)
    wait_for(lambda: settled(watcher))
    before = counters(watcher)["chunks_embedded"]

    (kb_dir / "a" / "b").mkdir(parents=True)  # a file made right after its folder: maybe no event
    (kb_dir / "a" / "b" / "deep.md").write_text("Glaciers carve valleys slowly.")
    (kb_dir / "a" / "top.txt").write_text("Rivers carry silt to the sea.")
    wait_for(lambda: found(watcher, "glaciers") == {"a/b/deep.md"})
    wait_for(lambda: found(watcher, "rivers") == {"a/top.txt"})
    wait_for(lambda: settled(watcher))  # the counters are a sync's, kept once it ends
    embedded = counters(watcher)["chunks_embedded"]
    assert embedded == before + 2

    (kb_dir / "a").rename(kb_dir / "z")  # inside the tree: the chunks follow, vectors reused
    wait_for(lambda: found(watcher, "glaciers") == {"z/b/deep.md"})
    wait_for(lambda: found(watcher, "rivers") == {"z/top.txt"})
    wait_for(lambda: settled(watcher))
    assert counters(watcher)["chunks_embedded"] == embedded

    outside = tmp_path / "elsewhere"
    (kb_dir / "z").rename(outside)  # out of the tree: a folder deletion
    wait_for(lambda: found(watcher, "glaciers") | found(watcher, "rivers") == set())
    shutil.move(outside, kb_dir / "back")  # and in again
    wait_for(lambda: found(watcher, "glaciers") == {"back/b/deep.md"})
    shutil.rmtree(kb_dir / "back")
    wait_for(lambda: found(watcher, "glaciers") == set())
    assert watcher.status()["collections"]["notes"]["files"] == 0


def test_save_burst_is_indexed_once_when_quiet(kb_dir: Path, start_watcher) -> None:
    """20 appends 20 ms apart against a 0.5 s quiet period: one index of the file. The verdict
    rests on the gaps the writes really had, not on the ones intended: a gap that may have
    reached the quiet period (this process stalled on a loaded machine) lets the watcher index
    what it had, once more per such gap, and no more."""
    debounce_s = 0.5
    watcher = start_watcher(kb_dir, debounce_s=debounce_s)
    wait_for(lambda: settled(watcher))
    syncs = counters(watcher)["syncs"]  # the start-up reconcile

    path = kb_dir / "draft.md"
    long_gaps = 0
    previous_start = None
    for n in range(20):  # an editor's autosave / a copy in progress
        started = time.monotonic()
        with path.open("a") as handle:
            handle.write(f"Line {n} of the draft about volcanoes{n}.\n")
        if previous_start is not None and time.monotonic() - previous_start >= debounce_s:
            long_gaps += 1  # at most this long between two writes: maybe quiet for the watcher
        previous_start = started
        time.sleep(0.02)

    wait_for(lambda: found(watcher, "volcanoes19") == {"draft.md"} and settled(watcher))
    indexed = counters(watcher)["files_indexed"]
    print(f"{indexed} index(es) of the burst, {long_gaps} gap(s) of {debounce_s} s or more")
    assert 1 <= indexed <= 1 + long_gaps
    assert counters(watcher)["syncs"] - syncs == indexed  # each index one sync of this file


def test_files_quiet_at_the_same_time_are_indexed_in_one_sync(kb_dir: Path, start_watcher) -> None:
    """The watcher's clock is the test's: the five files are seen pending (their events arrived),
    then become quiet together when the clock moves past the debounce, however slowly they were
    written."""
    skew = [0.0]
    watcher = start_watcher(kb_dir, debounce_s=60, clock=lambda: time.monotonic() + skew[0])
    wait_for(lambda: settled(watcher))
    syncs = counters(watcher)["syncs"]

    for n in range(5):
        (kb_dir / f"note{n}.md").write_text(f"Note {n} mentions comets{n}.")
    wait_for(lambda: watcher.status()["collections"]["notes"]["queue"] == 5)
    assert counters(watcher)["files_indexed"] == 0  # none quiet yet: the clock has not moved

    skew[0] += 60
    watcher.wake()
    wait_for(lambda: counters(watcher)["files_indexed"] == 5)
    assert counters(watcher)["syncs"] == syncs + 1  # one sync: one shared embedding batch
    assert found(watcher, "comets3") == {"note3.md"}


def test_ignored_names_and_editor_swap_files(kb_dir: Path, start_watcher) -> None:
    watcher = start_watcher(kb_dir)
    wait_for(lambda: settled(watcher))

    (kb_dir / ".hidden.md").write_text("Secret walrus.")
    (kb_dir / "_generated.md").write_text("Generated walrus.")
    (kb_dir / "notes.md.swp").write_text("Swap walrus.")
    (kb_dir / "clip.mp4").write_bytes(b"\x00\x00 walrus")
    (kb_dir / "notes.md.tmp").write_text("Saved walrus.")  # an editor's atomic save
    (kb_dir / "notes.md.tmp").rename(kb_dir / "notes.md")

    wait_for(lambda: found(watcher, "walrus") == {"notes.md"})
    (kb_dir / "notes.md").rename(kb_dir / "notes.md.bak")  # renamed to an ignored name: gone
    wait_for(lambda: found(watcher, "walrus") == set())


def test_start_up_reconcile_applies_changes_made_while_stopped(kb_dir: Path, start_watcher) -> None:
    (kb_dir / "keep.md").write_text("Owls hunt at night.")
    (kb_dir / "edit.md").write_text("Foxes are clever.")
    (kb_dir / "drop.md").write_text("Moles dig tunnels.")
    (kb_dir / "move.md").write_text("Otters hold hands.")
    watcher = start_watcher(kb_dir)
    wait_for(lambda: found(watcher, "otters") == {"move.md"})
    assert found(watcher, "moles") == {"drop.md"}
    stop(watcher)

    (kb_dir / "edit.md").write_text("Foxes are clever and quick.")
    (kb_dir / "drop.md").unlink()
    (kb_dir / "new.md").write_text("Herons wait in the shallows.")
    (kb_dir / "move.md").rename(kb_dir / "moved.md")

    watcher = start_watcher(kb_dir)
    wait_for(lambda: settled(watcher))
    assert found(watcher, "quick") == {"edit.md"}
    assert found(watcher, "moles") == set()
    assert found(watcher, "herons") == {"new.md"}
    assert found(watcher, "otters") == {"moved.md"}
    assert found(watcher, "owls") == {"keep.md"}
    row = watcher.status()["collections"]["notes"]
    assert row["files"] == 4
    # the edited and the new file are embedded; the renamed one reuses its vector
    assert row["counters"]["chunks_embedded"] == 2


def test_a_missing_kb_folder_is_watched_once_it_appears(tmp_path: Path, start_watcher) -> None:
    kb_dir = tmp_path / "later"
    watcher = start_watcher(kb_dir, rescan_s=0.3)
    wait_for(lambda: watcher.status()["collections"]["notes"]["watching"] is False)

    kb_dir.mkdir()
    (kb_dir / "first.md").write_text("Lighthouses guide ships.")

    wait_for(lambda: found(watcher, "lighthouses") == {"first.md"})
    # the sync that stored it may have begun before the folder was there: it is watched right after
    wait_for(lambda: watcher.status()["collections"]["notes"]["watching"] is True)
    (kb_dir / "second.md").write_text("Buoys mark channels.")  # and events flow
    wait_for(lambda: found(watcher, "buoys") == {"second.md"})


def test_a_kb_folder_appearing_while_it_is_listed_is_watched(tmp_path: Path, start_watcher) -> None:
    """The start-up reconcile finds no folder to watch, then lists the folder made meanwhile: the
    watch is armed after that sync, not only at the next rescan (here: none)."""
    kb_dir = tmp_path / "later"
    watcher = start_watcher(kb_dir, rescan_s=0, run=False)
    with watcher.hub.collection("notes").syncing:  # the reconcile waits at the door, watch unarmed
        watcher.start()
        wait_for(lambda: waiting_in("rag-indexer", "sync_collection"))
        assert watcher.status()["collections"]["notes"]["watching"] is False
        kb_dir.mkdir()
        (kb_dir / "first.md").write_text("Lighthouses guide ships.")
        os.utime(kb_dir / "first.md", (time.time() - 60, time.time() - 60))  # quiet: indexed now
    wait_for(lambda: found(watcher, "lighthouses") == {"first.md"})

    wait_for(lambda: watcher.status()["collections"]["notes"]["watching"] is True)
    (kb_dir / "second.md").write_text("Buoys mark channels.")  # only an event can bring this one
    wait_for(lambda: found(watcher, "buoys") == {"second.md"})


def test_a_vanished_kb_folder_keeps_its_chunks_and_is_watched_again(
    kb_dir: Path, start_watcher
) -> None:
    (kb_dir / "a.md").write_text("Puffins nest on cliffs.")
    watcher = start_watcher(kb_dir, rescan_s=0.3)
    wait_for(lambda: found(watcher, "puffins") == {"a.md"})

    shutil.rmtree(kb_dir)  # an unmounted share looks the same: not "every file was deleted"
    wait_for(lambda: watcher.status()["collections"]["notes"]["watching"] is False)
    assert found(watcher, "puffins") == {"a.md"}

    kb_dir.mkdir()
    (kb_dir / "b.md").write_text("Gannets dive for fish.")
    wait_for(lambda: found(watcher, "gannets") == {"b.md"})
    wait_for(lambda: found(watcher, "puffins") == set())  # back, and a.md is really gone
    (kb_dir / "c.md").write_text("Terns migrate far.")  # events flow again
    wait_for(lambda: found(watcher, "terns") == {"c.md"})
    assert watcher.status()["collections"]["notes"]["watching"] is True
