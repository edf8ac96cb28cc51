"""Backups on both engines: a collection (kb files, API chunks, dynamic notes with metadata, several
versions of a document) backed up, destroyed and restored is the same collection: every point,
vector, payload and version, and the same ranking; a corrupt or truncated backup is refused with
nothing changed."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_api.errors import BackupInvalid, EmbedderMismatch, InsufficientStorage
from rag_api.hub import Hub
from rag_api.ops.backup import file_format as fmt
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.take import take_backup
from rag_api.ops.backup.writer import _lower, write_aside
from rag_api.store import PointData, Selector
from tests.conftest import hash_collection, write_config
from tests.support.backup_world import populate, rankings, state
from tests.support.writes import replace_source


@pytest.fixture
def world(tmp_path, make_settings, engine):
    kb = tmp_path / "kb"
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, dim=96)})
    settings = make_settings(config, engine)
    return settings, kb


def opened(settings) -> Hub:
    return Hub.open(settings)


def backed_up(settings, kb: Path, to: Path) -> Path:
    """A backup of `docs` populated from `kb`, its hub closed after."""
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        return Path(take_backup(hub, to=to).path)
    finally:
        hub.close()


def test_round_trip_after_the_data_folder_is_gone(world, tmp_path: Path) -> None:
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        before, ranked = state(hub, "docs"), rankings(hub)
        gens = {p["gen"] for _, _, p in before.values() if p.get("source") == "api/hours"}
        assert len(gens) == 1 and len(before) > 20  # the third version of api/hours, whole
        assert any(p.get("metadata", {}).get("customer") == "acme" for _, _, p in before.values())
        result = take_backup(hub, to=tmp_path / "backups")
    finally:
        hub.close()
    assert result.collections["docs"]["points"] == len(before)
    shutil.rmtree(
        settings.data_dir, ignore_errors=True
    )  # the disk is lost (memory: the store went with the process)

    hub = opened(settings)
    try:
        assert hub.store.alias_target("docs") is None
        restored = restore_backup(hub, Path(result.path))
        assert [(r.collection, r.live, r.points) for r in restored.restored] == [
            ("docs", "docs__v1", len(before))
        ]
        after = state(hub, "docs")
        assert after.keys() == before.keys()
        for pid, (dense, sparse, payload) in before.items():
            assert after[pid][0] == pytest.approx(dense, abs=1e-7)
            assert after[pid][1] == sparse
            assert after[pid][2] == payload  # text, metadata, seq, gen, hashes: all of it
        assert rankings(hub) == ranked
        # the chunk sequence goes on from the restored numbers
        replace_source(hub.collection("docs"), "api/new", [], {"origin": "api"})
        seqs = [p["seq"] for _, _, p in before.values()]
        assert hub.collection("docs").allocate(1) == [max(seqs) + 1]
    finally:
        hub.close()


def test_restore_swaps_the_alias_and_as_restores_beside(world, tmp_path: Path) -> None:
    settings, kb = world
    hub = opened(settings)
    try:
        collection = hub.collection("docs")
        populate(collection, kb)
        before, ranked = state(hub, "docs"), rankings(hub)
        backup = Path(take_backup(hub, to=tmp_path / "b").path)
        collection.delete(Selector(source_prefix="api/"))  # a mistaken prefix removal
        assert len(state(hub, "docs")) < len(before)

        restored = restore_backup(hub, backup).restored[0]
        assert (restored.previous, restored.live) == ("docs__v1", "docs__v2")
        assert (
            hub.store.alias_target("docs") == "docs__v2"
            and "docs__v1" in hub.store.physical_collections()
        )
        assert state(hub, "docs").keys() == before.keys()
        assert rankings(hub) == ranked

        beside = restore_backup(hub, backup, as_name="docs_then")
        assert beside.restored[0].live == "docs_then__v1"
        assert "not in collections.yaml" in beside.notes[0]
        assert hub.store.alias_target("docs") == "docs__v2"  # the live one untouched
        assert state(hub, "docs_then").keys() == before.keys()
    finally:
        hub.close()


def test_corrupt_and_truncated_backups_are_refused_with_nothing_changed(
    world, tmp_path: Path
) -> None:
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        good = Path(take_backup(hub, to=tmp_path / "b").path)
        before = state(hub, "docs")
        physicals = hub.store.physical_collections()

        flipped = _copy(good, tmp_path / "flipped")
        data = flipped / fmt.collection_file("docs")
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        data.write_bytes(bytes(raw))
        truncated = _copy(good, tmp_path / "truncated")
        data = truncated / fmt.collection_file("docs")
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
        manifest = _copy(good, tmp_path / "manifest")
        text = (manifest / fmt.MANIFEST).read_text()
        (manifest / fmt.MANIFEST).write_text(text.replace('"points": ', '"points": 1', 1))

        for bad, says in [
            (flipped, "checksum mismatch"),
            (truncated, "truncated"),
            (manifest, "manifest does not match its checksum"),
            (tmp_path / "nowhere", "no such backup"),
        ]:
            with pytest.raises(BackupInvalid, match=says):
                restore_backup(hub, bad)
            assert hub.store.physical_collections() == physicals
            assert hub.store.alias_target("docs") == "docs__v1"
            assert state(hub, "docs") == before
    finally:
        hub.close()


def test_truncated_even_with_a_matching_manifest_is_refused(world, tmp_path: Path) -> None:
    """A collection file cut short whose manifest was rewritten to match (a copy tool that
    re-hashed what it got) still fails: the gzip stream and the point count are checked."""
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        folder = Path(take_backup(hub, to=tmp_path / "b").path)
        data = folder / fmt.collection_file("docs")
        lines = gzip.decompress(data.read_bytes()).splitlines(keepends=True)
        data.write_bytes(gzip.compress(b"".join(lines[:-3])))
        manifest = json.loads((folder / fmt.MANIFEST).read_text())
        manifest["collections"]["docs"].update(fmt.file_entry(data))
        (folder / fmt.MANIFEST).write_text(json.dumps(fmt.seal(manifest)))
        with pytest.raises(BackupInvalid, match="points, header says"):
            restore_backup(hub, folder)
        assert hub.store.physical_collections() == ["docs__v1"]
    finally:
        hub.close()


def _rewritten(folder: Path, lines: list[bytes], points: int | None = None) -> None:
    """The docs file rewritten as these lines and the manifest re-hashed to match (a copy tool
    that re-hashed what it got): only the counts and the lines themselves are left to check."""
    data = folder / fmt.collection_file("docs")
    data.write_bytes(gzip.compress(b"".join(lines)))
    manifest = json.loads((folder / fmt.MANIFEST).read_text())
    manifest["collections"]["docs"].update(fmt.file_entry(data))
    if points is not None:
        manifest["collections"]["docs"]["points"] = points
    (folder / fmt.MANIFEST).write_text(json.dumps(fmt.seal(manifest)))


def test_a_manifest_whose_count_differs_from_the_header_is_refused(world, tmp_path: Path) -> None:
    """The manifest's point count is checked against the file's header before anything is
    touched (verification is by hashes and counts; no vector is decoded to check a backup)."""
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        folder = Path(take_backup(hub, to=tmp_path / "b").path)
        before = state(hub, "docs")
        lines = gzip.decompress((folder / fmt.collection_file("docs")).read_bytes())
        _rewritten(folder, lines.splitlines(keepends=True), points=len(before) + 1)
        with pytest.raises(BackupInvalid, match="the manifest"):
            restore_backup(hub, folder)
        assert hub.store.physical_collections() == ["docs__v1"]
        assert state(hub, "docs") == before
    finally:
        hub.close()


def test_a_line_that_passes_the_hashes_but_not_decoding_is_refused(world, tmp_path) -> None:
    """Verification does not decode the vectors; the restore does, once, as it writes them: a line
    that does not decode fails the restore before the swap, its new collection dropped, the live
    one untouched."""
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        before = state(hub, "docs")
        good = Path(take_backup(hub, to=tmp_path / "b").path)
        lines = gzip.decompress((good / fmt.collection_file("docs")).read_bytes())
        lines = lines.splitlines(keepends=True)
        bad_vector, bad_dim = _copy(good, tmp_path / "vector"), _copy(good, tmp_path / "dim")
        point = json.loads(lines[-1])
        point["dense"] = "not base64 at all!"
        _rewritten(bad_vector, [*lines[:-1], json.dumps(point).encode() + b"\n"])
        point["dense"] = json.loads(fmt.encode_point(PointData("x", [0.5] * 3, {})))["dense"]
        _rewritten(bad_dim, [*lines[:-1], json.dumps(point).encode() + b"\n"])

        fmt.verify(bad_vector)  # hashes and counts match
        for bad, says in [(bad_vector, "unreadable"), (bad_dim, "has a 3d vector")]:
            with pytest.raises(BackupInvalid, match=says):
                restore_backup(hub, bad)
            assert hub.store.physical_collections() == ["docs__v1"]
            assert hub.store.alias_target("docs") == "docs__v1"
            assert state(hub, "docs") == before
    finally:
        hub.close()


def test_another_embedder_is_refused_unless_adopted(world, tmp_path: Path) -> None:
    settings, kb = world
    folder = backed_up(settings, kb, tmp_path / "b")
    other = hash_collection(kb, dim=64, embedder={"provider": "hash", "model": "other", "dim": 64})
    write_config(settings.config, {"docs": other})
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    hub = opened(settings)
    try:
        with pytest.raises(EmbedderMismatch, match="--with-config"):
            restore_backup(hub, folder)
        assert hub.store.physical_collections() == []
        restored = restore_backup(hub, folder, adopt_config=True).restored[0]
        assert restored.config_adopted
        assert hub.collection("docs").cfg.embedder.dim == 96
        assert rankings(hub)[0]
    finally:
        hub.close()


def test_the_same_model_at_another_dimension_is_adopted_too(world, tmp_path: Path) -> None:
    """Adopting compares the dimension as the refusal does: the same provider and model name at
    another `dim` is another embedder (it once kept the live 64d config over 96d vectors)."""
    settings, kb = world
    folder = backed_up(settings, kb, tmp_path / "b")
    write_config(settings.config, {"docs": hash_collection(kb, dim=64)})  # hash-test, 64d
    hub = opened(settings)
    try:
        with pytest.raises(EmbedderMismatch, match="96d"):
            restore_backup(hub, folder)
        restored = restore_backup(hub, folder, adopt_config=True).restored[0]
        assert restored.config_adopted
        assert hub.collection("docs").cfg.embedder.dim == 96
        assert rankings(hub)[0]  # searchable: the vectors and the model agree
    finally:
        hub.close()


def test_a_full_disk_removes_the_partial_backup(world, tmp_path: Path, monkeypatch) -> None:
    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        before = state(hub, "docs")
        calls = {"n": 0}
        real = fmt.CollectionWriter.write

        def full(self, points):  # the disk fills after the first page
            calls["n"] += 1
            if calls["n"] > 1:
                raise OSError(28, "No space left on device")
            return real(self, points)

        monkeypatch.setattr("rag_api.ops.backup.take.PAGE", 8)
        monkeypatch.setattr(fmt.CollectionWriter, "write", full)
        with pytest.raises(InsufficientStorage, match="partial backup was removed"):
            take_backup(hub, to=tmp_path / "b")
        assert list((tmp_path / "b").iterdir()) == []
        assert state(hub, "docs") == before
    finally:
        hub.close()


@pytest.mark.slow
def test_a_backup_inside_the_server_writes_the_same_points(world, tmp_path: Path) -> None:
    settings, kb = world  # in the server the file is written by a child process
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        here = take_backup(hub, to=tmp_path / "here")
        aside = take_backup(hub, to=tmp_path / "aside", in_server=True)
        points = []
        for result in (here, aside):
            folder = Path(result.path)
            entry = fmt.verify(folder)["collections"]["docs"]
            points.append(
                list(fmt.points_of(folder, entry, fmt.read_header(folder, "docs", entry)))
            )
        assert points[0] == points[1] and len(points[1]) == len(state(hub, "docs"))
    finally:
        hub.close()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_disk_in_the_writer_process_is_a_full_disk(tmp_path: Path) -> None:
    target = tmp_path / "collections" / "docs.jsonl.gz"
    target.parent.mkdir()
    target.symlink_to("/dev/full")  # every write there fails: ENOSPC
    header = fmt.Header("docs", "docs__v1", 4, 1, "hash:test", {}, {}, "2026-01-01T00:00:00+00:00")
    page = [PointData("7", [0.5, 0.25, 0.0, 1.0], {"text": "x" * 200_000})]
    with pytest.raises(OSError) as raised:
        write_aside(target, header, [page], nice=0)
    assert raised.value.errno == errno.ENOSPC
    assert not target.is_symlink()  # the partial file is removed


def _copy(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    return to


def test_the_writer_process_runs_batch_nice_levels_below_the_server() -> None:
    # a server already niced (systemd's Nice=3) puts its writer 3 + RAG_BATCH_NICE down, capped
    child = subprocess.Popen(["sleep", "30"], preexec_fn=lambda: os.nice(3))
    try:
        server = os.getpriority(os.PRIO_PROCESS, child.pid)  # 3, or more under a niced runner
        _lower(child.pid, 4)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == min(19, server + 4)
        _lower(child.pid, 40)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == 19
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("engine", ["edge"])
def test_no_room_for_the_shard_copy_is_a_full_disk(world, tmp_path: Path) -> None:
    settings, kb = world  # in the server the embedded shard is copied beside itself first
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        before = state(hub, "docs")
        hub.store.disk.min_free = hub.store.disk.free() + (1 << 40)  # the copy cannot fit
        with pytest.raises(InsufficientStorage, match="copy 'docs__v1' for a backup"):
            take_backup(hub, to=tmp_path / "b", in_server=True)
        assert list((tmp_path / "b").iterdir()) == []
        assert not (settings.data_dir / ".backup-scratch").exists()
        hub.store.disk.min_free = 0
        assert state(hub, "docs") == before
    finally:
        hub.close()


def test_the_scoped_keys_file_goes_with_the_backup_as_it_is(world, tmp_path: Path) -> None:
    from rag_api.access.keys import KeysFile

    settings, kb = world
    key, secret = KeysFile(settings.keys_path).create("feed", ["docs"], ["docs"])
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        result = take_backup(hub, to=tmp_path / "backups")
    finally:
        hub.close()
    copied = Path(result.path) / fmt.EXTRA / "keys" / settings.keys_path.name
    assert copied.read_bytes() == settings.keys_path.read_bytes()
    assert copied.stat().st_mode & 0o777 == 0o600 and secret not in copied.read_text()
    manifest = json.loads((Path(result.path) / fmt.MANIFEST).read_text())
    assert f"keys/{settings.keys_path.name}" in manifest["extra"]


def test_a_changed_or_missing_file_under_extra_is_refused(world, tmp_path: Path) -> None:
    from rag_api.access.keys import KeysFile

    settings, kb = world
    KeysFile(settings.keys_path).create("feed", ["docs"], ["docs"])
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        backup = Path(take_backup(hub, to=tmp_path / "backups").path)
    finally:
        hub.close()
    keys = backup / fmt.EXTRA / "keys" / settings.keys_path.name
    fmt.verify(backup)  # as taken: fine
    keys.write_text(keys.read_text().replace("feed", "fead"))
    with pytest.raises(BackupInvalid, match="checksum mismatch"):
        fmt.verify(backup)
    keys.unlink()
    with pytest.raises(BackupInvalid, match="missing from the backup"):
        fmt.verify(backup)


def test_check_verify_backups_restores_the_newest_into_a_scratch_store(world, tmp_path) -> None:
    from rag_api.ops.check.run import run_check

    settings, kb = world
    hub = opened(settings)
    try:
        populate(hub.collection("docs"), kb)
        taken = take_backup(hub)  # into RAG_BACKUP_DIR, where check looks
        report = run_check(hub, "docs", verify_backups=True)
        assert [f for f in report.results[0].findings if f.check == "backup"] == []
        live = state(hub, "docs")
        path = Path(taken.path) / taken.collections["docs"]["file"]
        path.write_bytes(path.read_bytes()[:-40])  # the newest backup truncated on disk
        report = run_check(hub, "docs", verify_backups=True)
        found = [f.detail for f in report.results[0].findings if f.check == "backup"]
        assert len(found) == 1 and "does not restore" in found[0], found
        assert state(hub, "docs") == live  # the live collection untouched
    finally:
        hub.close()
