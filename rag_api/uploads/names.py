"""Where an uploaded file may go: a kb-relative POSIX path the indexer will index, inside the folder.

A name is taken apart by `/`, each part normalised (Unicode NFC, surrounding blanks removed, `.`
and empty parts dropped) and refused — never silently renamed, so the client knows what the file
is called — when it could leave the kb folder (`..`, an absolute path, a backslash), when the
indexer would never index it (hidden `.x`, `_`-prefixed, editor swap/backup names: the same rule
as the watcher, rag_api.indexing.kb.ignore_reason), when Windows or a file share could not hold it
(reserved device names such as `CON` or `lpt1.txt`, `<>:"|?*`, control characters, a trailing
dot), or when it is longer than a source name may be. Its type must be one a reader handles (415).
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

from rag_api.errors import FileNotFound, InvalidRequest, UnsupportedFileType
from rag_api.indexing.chunking import SUFFIXES
from rag_api.indexing.kb import ignore_reason

MAX_PATH_CHARS = 512  # a source name's limit (docs/http-api.md, Limits)
MAX_PART_BYTES = 255  # a file name's limit on common filesystems
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)
_FORBIDDEN = re.compile(r'[<>:"|?*\x00-\x1f\x7f\u0085\u2028\u2029]')


def clean_path(folder: str | None, filename: str | None) -> str:
    """The kb-relative path for `filename` inside the sub-folder `folder`; InvalidRequest (422)
    naming the problem, UnsupportedFileType (415) for a type no reader handles."""
    if not filename:
        raise InvalidRequest("files: every file needs a name", param="files")
    name = _parts(filename, "filename")
    if not name:
        raise InvalidRequest(f"filename: '{filename}' names no file", param="files")
    rel = "/".join(_parts(folder or "", "folder") + name)
    if len(rel) > MAX_PATH_CHARS:
        raise InvalidRequest(f"'{rel[:60]}…' is longer than {MAX_PATH_CHARS} characters")
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix not in SUFFIXES:
        known = " ".join(sorted(SUFFIXES))
        raise UnsupportedFileType(
            f"'{rel}': {'files of type ' + repr(suffix) if suffix else 'a file without an extension'}"
            f" cannot be indexed; supported: {known}"
        )
    reason = ignore_reason(rel)
    if reason is not None:
        raise InvalidRequest(f"'{rel}' would never be indexed: {reason} name", param="files")
    return rel


def _parts(value: str, field: str) -> list[str]:
    text = unicodedata.normalize("NFC", value)
    if "\\" in text:
        raise InvalidRequest(f"{field}: '{value}' contains a backslash; use '/'", param=field)
    if text.startswith("/"):
        raise InvalidRequest(f"{field}: '{value}' is absolute; give a path inside the kb folder")
    parts = [part.strip() for part in text.split("/")]
    kept = [part for part in parts if part not in ("", ".")]
    for part in kept:
        _check_part(part, value, field)
    return kept


def _check_part(part: str, value: str, field: str) -> None:
    def refuse(why: str) -> None:
        raise InvalidRequest(f"{field}: '{value}' {why}", param=field)

    if part == "..":
        refuse("leaves the kb folder ('..')")
    if part.startswith("."):
        refuse(f"has a hidden part '{part}' (the indexer ignores hidden files)")
    if _FORBIDDEN.search(part):
        refuse(f"has a character a file name cannot hold in '{part}'")
    if _RESERVED.match(part):
        refuse(f"uses the reserved device name '{part}'")
    if part.endswith("."):
        refuse(f"has a part ending with a dot ('{part}')")
    if len(part.encode("utf-8")) > MAX_PART_BYTES:
        refuse(f"has a part longer than {MAX_PART_BYTES} bytes")


def inside(root: Path, rel: str) -> Path:
    """`root / rel`, refused (InvalidRequest) when a symbolic link on the way leads outside."""
    path = root / rel
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise InvalidRequest(f"'{rel}' leads outside the kb folder through a symbolic link")
    return path


def existing_file(root: Path, rel: str) -> tuple[str, Path]:
    """A file of the kb folder named by a URL path (download, delete): FileNotFound (404) for a
    name that is not a clean kb path or not a regular file inside the folder."""
    try:
        clean = "/".join(_parts(rel, "path"))
        path = inside(root, clean)
    except InvalidRequest as exc:
        raise FileNotFound(f"no file '{rel}': {exc.message}") from None
    if not clean or not path.is_file():
        raise FileNotFound(f"no file '{rel}' in the kb folder")
    return clean, path
