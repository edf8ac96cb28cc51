"""What a chunk's metadata may be: a flat map of scalars and short lists of scalars, bounded.

Every write into the store checks it here (the admin API, kb .jsonl lines, the write path itself,
migrations). The bounds sit far below the engine's limits: qdrant-edge accepts a payload nested
~120 levels deep and then can no longer read it back or replay its WAL (the collection, and at
start-up the whole server, would fail), and a list of a million items takes seconds and hundreds
of MB to store.
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

from rag_api.errors import InvalidRequest

MAX_KEYS = 64
KEY_MAX_CHARS = 64
STRING_MAX_CHARS = 2048
LIST_MAX_ITEMS = 64
MAX_BYTES = 16 * 1024  # the whole map as UTF-8 JSON
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # the engine stores signed 64-bit integers
# No request body or kb line nests deeper than ~10 levels; Python recursion (pydantic, our
# walkers) and the store's decoders fail at a few hundred.
MAX_DEPTH = 64

Scalar = str | int | float | bool | None
MetadataMap = dict[str, Scalar | list[Scalar]]


class InvalidMetadata(ValueError):
    """Metadata outside the rules; the message names the key."""


def check_metadata(value: Any) -> MetadataMap:
    """`value` if it is valid metadata, else InvalidMetadata saying which key breaks which rule."""
    if not isinstance(value, dict):
        raise InvalidMetadata(f"must be an object of keys to values, not {type(value).__name__}")
    if len(value) > MAX_KEYS:
        raise InvalidMetadata(f"has {len(value)} keys; the limit is {MAX_KEYS}")
    for key, item in value.items():
        _check_key(key)
        if isinstance(item, list):
            if len(item) > LIST_MAX_ITEMS:
                raise InvalidMetadata(
                    f"key {key!r}: a list of {len(item)} items; the limit is {LIST_MAX_ITEMS}"
                )
            for element in item:
                _check_scalar(key, element)
        else:
            _check_scalar(key, item)
    if problem := value_problem(value):  # lone surrogates, NaN, integers beyond 64 bits
        raise InvalidMetadata(problem[1])
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_BYTES:
        raise InvalidMetadata(f"is {size} bytes as JSON; the limit is {MAX_BYTES}")
    return value


def require_metadata(value: Any) -> MetadataMap:
    """`value` if it is valid metadata, else a 422 InvalidRequest naming the key (the write path's
    guard: the API and the kb readers have refused bad metadata earlier, with their own context)."""
    try:
        return check_metadata(value)
    except InvalidMetadata as exc:
        raise InvalidRequest(f"metadata {exc}", param="metadata") from None


def value_problem(document: Any) -> tuple[str, str] | None:
    """The first value of parsed JSON that nothing here can hold (nesting past MAX_DEPTH, a lone
    surrogate, NaN or Infinity, an integer beyond 64 bits), as (field, message); None if none."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            field = path[0] if path else "body"
            return field, f"{field}: nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, dict):
            for key, item in value.items():
                if unsafe_text(key):
                    return _at(path, "a key contains a lone surrogate (not valid Unicode)")
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, str(i))) for i, item in enumerate(value))
        elif isinstance(value, str):
            if problem := unsafe_text(value):
                return _at(path, problem)
        elif isinstance(value, float) and not math.isfinite(value):
            return _at(path, "NaN and Infinity are not JSON numbers")
        elif isinstance(value, int) and not isinstance(value, bool):
            if not INT_MIN <= value <= INT_MAX:
                return _at(path, "integer outside the signed 64-bit range")
    return None


def _at(path: tuple[str, ...], message: str) -> tuple[str, str]:
    field = ".".join(path) or "body"
    return field, f"{field}: {message}"


def unsafe_text(text: str) -> str | None:
    """Why a string cannot be stored (a lone surrogate is not Unicode), or None."""
    if text.isascii():
        return None
    try:
        text.encode()
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def has_line_break_or_control(text: str) -> bool:
    """Whether `text` holds a control character or a line/paragraph separator (U+0085, U+2028)."""
    return any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in text)


def _check_key(key: Any) -> None:
    if not isinstance(key, str) or not key:
        raise InvalidMetadata(f"key {key!r}: keys are non-empty strings")
    if len(key) > KEY_MAX_CHARS:
        raise InvalidMetadata(f"key {key[:20]!r}…: longer than {KEY_MAX_CHARS} characters")
    if has_line_break_or_control(key) or unsafe_text(key):
        raise InvalidMetadata(f"key {key!r}: control characters and lone surrogates are refused")


def _check_scalar(key: str, value: Any) -> None:
    if isinstance(value, str) and len(value) > STRING_MAX_CHARS:
        raise InvalidMetadata(
            f"key {key!r}: a string of {len(value)} characters; the limit is {STRING_MAX_CHARS}"
        )
    if value is not None and not isinstance(value, str | int | float):  # bool is an int
        raise InvalidMetadata(
            f"key {key!r}: {_kind(value)} is not allowed; metadata values are strings, numbers, "
            "booleans, null or flat lists of those"
        )


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a nested object"
    if isinstance(value, list):
        return "a nested list"
    return f"a {type(value).__name__}"
