"""A backup on disk: a folder per backup, one file per collection and a manifest with a checksum
per file (docs/operations.md, "Backups"). Engine-neutral: a backup of the embedded store restores
into a Qdrant server and back.

    20250601T033000Z/
      manifest.json                 format, hub version, time, per file: sha256, bytes, points
      collections/docs.jsonl.gz     a header line (config block, embedder, physical name, payload
                                    indexes, point count), then one point a line: id, dense and
                                    BM25 vectors (float32, base64), payload
      extra/jobs/...                the upload jobs, as they were

Every check a restore makes happens here before anything is touched, without decoding a vector:
the manifest's own checksum, each file's size and sha256 (the bytes are the bytes the backup
wrote), then each collection's counts: its header read, the points the header and the manifest
record, and the lines of the decompressed file counted (the gzip stream read to its end and its
CRC checked). A corrupt or truncated backup is refused with the file and the reason. The points
themselves are decoded once, as the restore writes them (`points_of`): a line that passes the
hashes but does not decode (a file no backup wrote) fails that collection's restore before its
swap, its new physical collection dropped.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from rag_api.errors import BackupInvalid, RagError
from rag_api.store import PointData, SparseVec

FORMAT = 1
KIND = "rag-hub-backup"
MANIFEST = "manifest.json"
COLLECTIONS = "collections"
EXTRA = "extra"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Header:
    """The first line of a collection file: what a restore needs besides the points."""

    collection: str
    physical: str | None
    dim: int
    points: int
    embedder: str  # the embedder identity the vectors were made with (provider:model)
    config: dict[str, Any]  # the collection's effective block of collections.yaml
    payload_indexes: dict[str, str]
    taken_at: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "format": FORMAT, **self.__dict__}


def collection_file(name: str) -> str:
    return f"{COLLECTIONS}/{name}.jsonl.gz"


def encode_point(point: PointData) -> bytes:
    dense = np.asarray(point.dense, dtype="<f4")
    line: dict[str, Any] = {"id": point.id, "dense": _b64(dense), "payload": point.payload}
    if point.sparse is not None:
        values = np.asarray(point.sparse.values, dtype="<f4")
        line["sparse"] = {"indices": list(point.sparse.indices), "values": _b64(values)}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode_point(line: bytes) -> PointData:
    raw = json.loads(line)
    dense = np.frombuffer(base64.b64decode(raw["dense"]), dtype="<f4").tolist()
    sparse = raw.get("sparse")
    vec = None
    if sparse is not None:
        values = np.frombuffer(base64.b64decode(sparse["values"]), dtype="<f4").tolist()
        vec = SparseVec(list(sparse["indices"]), values)
    return PointData(str(raw["id"]), dense, raw["payload"], vec)


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode("ascii")


class CollectionWriter:
    """Writes one collection file, hashing what it writes (the manifest's sha256 and size)."""

    def __init__(self, path: Path, header: Header) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._raw: IO[bytes] = open(path, "wb")  # noqa: SIM115 (closed in close())
        self._hash = _HashingFile(self._raw)
        self._gz = gzip.GzipFile(fileobj=self._hash, mode="wb", compresslevel=1, mtime=0)
        self._gz.write(json.dumps(header.as_dict(), ensure_ascii=False).encode() + b"\n")
        self.points = 0

    def write(self, points: Sequence[PointData]) -> None:
        self._gz.write(b"".join(encode_point(p) for p in points))
        self.points += len(points)

    def close(self) -> dict[str, Any]:
        """Finish the file (flushed to disk); its manifest entry."""
        self._gz.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        return {"sha256": self._hash.digest.hexdigest(), "bytes": self._hash.size}

    def abort(self) -> None:
        try:
            self._raw.close()
        finally:
            self.path.unlink(missing_ok=True)


class _HashingFile:
    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def write_points(
    path: Path, header: Header, pages: Iterable[Sequence[PointData]]
) -> dict[str, Any]:
    """Write a collection file of these pages, which must hold `header.points` points; its
    manifest entry (sha256, bytes, points). A failure removes the partial file."""
    writer = CollectionWriter(path, header)
    try:
        for page in pages:
            writer.write(page)
        if writer.points != header.points:
            raise RagError(f"{writer.points} points read where {header.points} were counted")
        return {**writer.close(), "points": header.points}
    except BaseException:
        writer.abort()
        raise


def file_entry(path: Path) -> dict[str, Any]:
    """sha256 and size of a file as the manifest records them."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
            size += len(block)
    return {"sha256": digest.hexdigest(), "bytes": size}


def seal(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest with its own checksum (over every other field, canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return {**body, "checksum": _canonical_hash(body)}


def _canonical_hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a backup folder, its own checksum verified."""
    path = folder / MANIFEST
    if not folder.is_dir():
        raise BackupInvalid(f"{folder}: no such backup folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupInvalid(
            f"{folder}: no {MANIFEST}: not a backup, or an unfinished one"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BackupInvalid(f"{path}: corrupt manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise BackupInvalid(f"{path}: not a rag-hub backup manifest")
    if manifest.get("format") != FORMAT:
        raise BackupInvalid(
            f"{path}: backup format {manifest.get('format')} (this hub reads {FORMAT})"
        )
    if manifest.get("checksum") != _canonical_hash(
        {k: v for k, v in manifest.items() if k != "checksum"}
    ):
        raise BackupInvalid(f"{path}: the manifest does not match its checksum (corrupt)")
    return manifest


def verify(folder: Path, only: list[str] | None = None) -> dict[str, Any]:
    """Check a backup whole before a restore touches anything: the manifest, then each file's
    size and sha256, then each collection's header and counts (its lines counted, no vector
    decoded). Returns the manifest."""
    manifest = read_manifest(folder)
    collections = manifest["collections"]
    for name in only or []:
        if name not in collections:
            held = ", ".join(sorted(collections)) or "none"
            raise BackupInvalid(f"{folder}: holds no collection '{name}' (it holds: {held})")
    files = {entry["file"]: entry for entry in collections.values()}
    files.update({f"{EXTRA}/{rel}": entry for rel, entry in manifest.get("extra", {}).items()})
    for rel, entry in files.items():
        path = folder / rel
        if not path.is_file():
            raise BackupInvalid(f"{path}: missing from the backup")
        found = file_entry(path)
        if found["bytes"] != entry["bytes"]:
            raise BackupInvalid(
                f"{path}: {found['bytes']} bytes where the manifest says {entry['bytes']} "
                "(truncated or altered)"
            )
        if found["sha256"] != entry["sha256"]:
            raise BackupInvalid(f"{path}: checksum mismatch (corrupt)")
    for name, entry in collections.items():
        if not only or name in only:
            header = read_header(folder, name, entry)
            path = folder / entry["file"]
            if header.points != entry.get("points"):
                raise BackupInvalid(
                    f"{path}: the header says {header.points} points, the manifest "
                    f"{entry.get('points')}"
                )
            count = count_points(path)
            if count != header.points:
                raise BackupInvalid(f"{path}: {count} points, header says {header.points}")
    return manifest


def count_points(path: Path) -> int:
    """The point lines of a collection file (its lines but the header), counted in the
    decompressed bytes: the gzip stream is read to its end (its CRC and length checked), no line
    is parsed."""
    lines, last = 0, b"\n"
    with _open(path) as handle:
        try:
            while block := handle.read(CHUNK):
                lines += block.count(b"\n")
                last = block[-1:]
        except (OSError, EOFError, zlib.error) as exc:
            raise BackupInvalid(f"{path}: unreadable ({exc})") from None
    if last != b"\n":
        raise BackupInvalid(f"{path}: ends in the middle of a line (truncated)")
    return max(lines - 1, 0)


def read_header(folder: Path, name: str, entry: dict[str, Any]) -> Header:
    with _open(folder / entry["file"]) as handle:
        line = _line(handle, folder / entry["file"])
    try:
        raw = json.loads(line)
        if raw.pop("kind") != KIND or raw.pop("format") != FORMAT or raw["collection"] != name:
            raise ValueError("not this collection's header")
        return Header(**raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise BackupInvalid(f"{folder / entry['file']}: bad header ({exc})") from None


def points_of(folder: Path, entry: dict[str, Any], header: Header) -> Iterator[PointData]:
    """The points of a collection file, in the order they were written."""
    path = folder / entry["file"]
    with _open(path) as handle:
        _line(handle, path)
        number = 1
        while True:
            line = _line(handle, path, allow_end=True)
            if not line:
                return
            number += 1
            try:
                point = decode_point(line)
            except (ValueError, KeyError, TypeError) as exc:
                raise BackupInvalid(f"{path}: line {number} unreadable ({exc})") from None
            if len(point.dense) != header.dim:
                raise BackupInvalid(f"{path}: line {number} has a {len(point.dense)}d vector")
            yield point


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb")


def _line(handle: IO[bytes], path: Path, allow_end: bool = False) -> bytes:
    try:
        line = handle.readline()
    except (OSError, EOFError, zlib.error) as exc:
        raise BackupInvalid(f"{path}: unreadable ({exc})") from None
    if not line and not allow_end:
        raise BackupInvalid(f"{path}: empty")
    if line and not line.endswith(b"\n"):
        raise BackupInvalid(f"{path}: ends in the middle of a line (truncated)")
    return line
