"""Blocks repeated across a collection's documents (a footer on every page, the menu of every web
page, a running header): the strongest boilerplate signal (rag_api.points.labels).

One census per physical collection: each point's lines (normalised: case, spacing and markdown
markers aside) and, per line, how many units hold it, a unit being a document or a page of one.
It is primed by one scan at the collection's first write in this process and kept current by
every write and delete after it, under the points lock; a change that carries a line across
REPEAT_MIN relabels the points that hold it (payload only, no vector is touched).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_api import payload
from rag_api.points.labels import BOILERPLATE_SHARE, Label, label
from rag_api.points.locks import ReadWriteLock
from rag_api.store import Selector, Store

REPEAT_MIN = 3  # units a line must be in to be furniture
MAX_LINE = (
    300  # a longer line is a paragraph: one copied into 3 documents is content, not furniture
)
# what StoredChunk needs for the text, source, metadata and type of any point, another tool's too
SCAN_FIELDS = [
    payload.TEXT,
    *payload.FOREIGN_TEXT_KEYS,
    payload.LLAMA_INDEX_NODE,
    *payload.SOURCE_FIELDS,
    payload.METADATA,
    payload.TYPE,
]

_MARKERS = re.compile(r"^[\s#>*+\-|•·]+|[\s|]+$")
_SPACES = re.compile(r"\s+")
_LETTERS = re.compile(r"[^\W\d_]+")


def _count_letters(text: str) -> int:
    return sum(map(len, _LETTERS.findall(text)))


def _line(line: str) -> tuple[tuple[int, int] | None, int]:
    """((key, letters) of a line that can repeat as furniture, None for one too short or long;
    the line's letters: the markers stripped are not letters)."""
    text = _MARKERS.sub("", line)
    count = _count_letters(text)
    if not text or len(text) > MAX_LINE or count < 3:
        return None, count
    # digits count: "Order 8942 shipped" in three notes is three orders, not furniture (a page
    # number is furniture by itself, rag_api.points.labels)
    return (hash(_SPACES.sub(" ", text.lower())), count), count


def unit_of(source: str, metadata: Mapping[str, Any]) -> str:
    """A document, or one page of a paged one (a running header repeats page after page)."""
    page = metadata.get("page")
    return f"{source}\x00{page}" if isinstance(page, int | str) and page != "" else source


@dataclass(frozen=True, slots=True)
class _Point:
    unit: str
    lines: tuple[tuple[int, int], ...]  # (key, letters) of each line that can repeat
    letters: int  # of the whole chunk


@functools.lru_cache(maxsize=4096)  # a chunk is counted as it is labelled, then as it is written
def _point(text: str, unit: str) -> _Point:
    keys = []
    total = 0
    for line in text.splitlines():
        key, count = _line(line)
        total += count
        if key is not None:
            keys.append(key)
    return _Point(unit, tuple(keys), total)


class Census:
    """One physical collection's lines and the units each is in."""

    def __init__(self) -> None:
        self.points: dict[str, _Point] = {}
        self.unit_lines: dict[str, Counter[int]] = {}
        self.units: Counter[int] = Counter()  # line key -> units holding it

    def repeated(self, text: str, unit: str) -> float:
        """The share of a chunk's letters in lines repeated across units, this chunk's unit
        counted as holding them."""
        point = _point(text, unit)
        held = self.unit_lines.get(unit, Counter())
        repeated = sum(
            letters
            for key, letters in point.lines
            if self.units[key] + (0 if held[key] else 1) >= REPEAT_MIN
        )
        return repeated / point.letters if point.letters else 0.0

    def stored_share(self, pid: str) -> float:
        point = self.points[pid]
        repeated = sum(n for key, n in point.lines if self.units[key] >= REPEAT_MIN)
        return repeated / point.letters if point.letters else 0.0

    def add(self, pid: str, text: str, unit: str) -> set[int]:
        """Count a point in (replacing what it was); returns the lines carried across REPEAT_MIN."""
        crossed = self.remove(pid)
        point = self.points[pid] = _point(text, unit)
        if not point.lines:
            return crossed
        held = self.unit_lines.setdefault(unit, Counter())
        for key, _ in point.lines:
            held[key] += 1
            if held[key] == 1:
                self.units[key] += 1
                if self.units[key] == REPEAT_MIN:
                    crossed.add(key)
        return crossed

    def remove(self, pid: str) -> set[int]:
        point = self.points.pop(pid, None)
        crossed: set[int] = set()
        if point is None or not point.lines:
            return crossed
        held = self.unit_lines[point.unit]
        for key, _ in point.lines:
            held[key] -= 1
            if held[key] == 0:
                del held[key]
                self.units[key] -= 1
                if self.units[key] == REPEAT_MIN - 1:
                    crossed.add(key)
                if not self.units[key]:
                    del self.units[key]
        if not held:
            del self.unit_lines[point.unit]
        return crossed

    def holding(self, keys: set[int]) -> list[str]:
        """The points that hold any of these lines."""
        if not keys:
            return []
        return [pid for pid, p in self.points.items() if any(k in keys for k, _ in p.lines)]


class Repetition:
    """The censuses of a collection's physical collections, and the relabelling they drive."""

    def __init__(self, store: Store, points_lock: ReadWriteLock) -> None:
        self.store = store
        self._points_lock = points_lock  # the collection's; writes hold it when they report here
        self._censuses: dict[str, Census] = {}
        self._prime_lock = threading.Lock()

    def primed(self, physical: str) -> bool:
        """Whether writes to this physical collection are being counted (so deletes report)."""
        return physical in self._censuses

    def census(self, physical: str, language: str) -> Census:
        """The physical collection's census, primed by one scan on first use; points found
        without labels (written before labels, or by another tool) are labelled then."""
        with self._prime_lock:
            census = self._censuses.get(physical)
            if census is None:
                census = self._censuses[physical] = Census()
                unlabelled = []
                for record in self.store.iter_records(physical, Selector(), fields=SCAN_FIELDS):
                    chunk = payload.StoredChunk(record.payload)
                    census.add(record.id, chunk.text, unit_of(chunk.source, chunk.metadata))
                    if chunk.type is None and chunk.text:
                        unlabelled.append(record.id)
                with self._points_lock.write():
                    self.relabel(physical, census, unlabelled, language)
            return census

    def written(
        self, physical: str, language: str, removed: Iterable[str], points: Sequence[Any]
    ) -> None:
        """After a write, under the points lock: count out `removed` ids and count in the
        written points (PointData), then relabel every point whose repetition changed."""
        census = self._censuses.get(physical)
        if census is None:
            return
        crossed: set[int] = set()
        for pid in removed:
            crossed |= census.remove(pid)
        for point in points:
            chunk = payload.StoredChunk(point.payload)
            crossed |= census.add(point.id, chunk.text, unit_of(chunk.source, chunk.metadata))
        # a point labelled before an earlier one of the same write carried its lines across
        behind = [
            point.id
            for point in points
            if (census.stored_share(point.id) >= BOILERPLATE_SHARE)
            != (point.payload.get(payload.TYPE) == "boilerplate")
        ]
        affected = set(census.holding(crossed)).union(behind)
        self.relabel(physical, census, sorted(affected), language)

    def relabel(self, physical: str, census: Census, ids: list[str], language: str) -> int:
        """Under the points lock: label these points anew from their stored text and the census; only changed labels
        are written, grouped by label (one engine operation per distinct label)."""
        groups: dict[Label, list[str]] = {}
        for start in range(0, len(ids), 256):
            for record in self.store.retrieve(physical, ids[start : start + 256]):
                chunk = payload.StoredChunk(record.payload)
                share = census.stored_share(record.id) if record.id in census.points else 0.0
                new = label(chunk.text, language, chunk.metadata, share)
                if new.payload() != chunk.labels():
                    groups.setdefault(new, []).append(record.id)
        for new, members in groups.items():
            self.store.set_payload(physical, members, new.payload())
        return sum(len(members) for members in groups.values())
