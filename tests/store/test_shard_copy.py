"""A shard's folder copied for a backup: every byte the same, the holes still holes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rag_api.store.shard_copy import copy_aside, copy_folder

MB = 1 << 20


def test_a_copy_holds_the_same_bytes_and_keeps_the_holes(tmp_path: Path) -> None:
    source = tmp_path / "shard"
    (source / "segments" / "a").mkdir(parents=True)
    sparse = source / "segments" / "a" / "page_0.dat"
    with open(sparse, "wb") as handle:  # 32 MB preallocated, data at the start and in the middle
        handle.write(b"head" * 1000)
        handle.seek(10 * MB)
        handle.write(os.urandom(100_000))
        handle.truncate(32 * MB)
    (source / "wal").mkdir()
    (source / "wal" / "open-1").write_bytes(b"")  # empty
    (source / "edge_config.json").write_text('{"vectors": {}}')

    copied = copy_folder(source, tmp_path / "copy")

    for path in (p for p in source.rglob("*") if p.is_file()):
        twin = tmp_path / "copy" / path.relative_to(source)
        assert twin.read_bytes() == path.read_bytes(), path
    twin = tmp_path / "copy" / "segments" / "a" / "page_0.dat"
    assert twin.stat().st_size == 32 * MB
    assert twin.stat().st_blocks * 512 < 4 * MB  # the holes were not written out
    assert copied < 4 * MB


def test_a_copy_aside_fails_with_the_errno_of_its_failure(tmp_path: Path) -> None:
    (tmp_path / "shard").mkdir()
    (tmp_path / "shard" / "edge_config.json").write_text("{}")
    (tmp_path / "taken").write_text("a file where the copy's folder would go")
    with pytest.raises(OSError) as raised:
        copy_aside(tmp_path / "shard", tmp_path / "taken")
    assert raised.value.errno in (errno.EEXIST, errno.ENOTDIR) and "taken" in str(raised.value)
    copy_aside(tmp_path / "shard", tmp_path / "copy")
    assert (tmp_path / "copy" / "edge_config.json").read_text() == "{}"
