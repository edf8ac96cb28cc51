"""Document generations: replacing a document is atomic across a crash (the protocol, and why
the newest generation is whole: docs/architecture.md, "Document generations")."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rag_api.payload import FILE, FROM_API, FROM_FILE, FROM_SOURCE, GEN, ORIGIN, SOURCE
from rag_api.store import Selector, Store

FIELDS = [ORIGIN, SOURCE, FILE, GEN]
NONE = -1  # the generation of chunks written before generations existed: older than any
# ("file", kb-relative path), ("api", source) or ("source", `name:key`)
DocumentKey = tuple[str, str]
BY_SOURCE = (FROM_API, FROM_SOURCE)  # the origins whose documents are named by `source`


def document_key(payload: dict[str, Any]) -> DocumentKey | None:
    """The document a chunk belongs to, as a replacement scopes it (None: another tool's)."""
    origin = payload.get(ORIGIN)
    name = payload.get(FILE) if origin == FROM_FILE else payload.get(SOURCE)
    if origin in (FROM_FILE, *BY_SOURCE) and isinstance(name, str):
        return (origin, name)
    return None


def generation_of(payload: dict[str, Any]) -> int:
    gen = payload.get(GEN)
    return gen if isinstance(gen, int) and not isinstance(gen, bool) else NONE


def stamp(
    store: Store,
    physical: str,
    payloads: list[dict[str, Any]],
    replaced: Iterable[dict[str, Any]] | None,
) -> None:
    """Set each new chunk's generation: a new one for a replacement (`replaced` holds the payloads
    of the chunks it replaces), else the one its document already has."""
    if replaced is not None:
        gen = max(time.time_ns(), max(map(generation_of, replaced), default=NONE) + 1)
        for payload in payloads:
            payload[GEN] = gen
        return
    keys = [document_key(payload) for payload in payloads]
    current = _current(store, physical, {key for key in keys if key is not None})
    for payload, key in zip(payloads, keys, strict=True):
        gen = current.get(key, NONE) if key is not None else NONE
        if gen == NONE:
            payload.pop(GEN, None)
        else:
            payload[GEN] = gen


def _current(store: Store, physical: str, keys: set[DocumentKey]) -> dict[DocumentKey, int]:
    """The generation each of these documents has now (absent: none)."""
    files = tuple(sorted(name for origin, name in keys if origin == FROM_FILE))
    selectors = [Selector(origin=FROM_FILE, files=files)] + [
        Selector(
            origin=kind, sources=tuple(sorted(name for origin, name in keys if origin == kind))
        )
        for kind in BY_SOURCE
    ]
    found: dict[DocumentKey, int] = {}
    for selector in selectors:
        for record in store.iter_records(physical, selector, fields=FIELDS):
            key = document_key(record.payload)
            if key in keys:
                found[key] = max(found.get(key, NONE), generation_of(record.payload))
    return found


def newest(hits: list[Any]) -> list[Any]:
    """The hits (with `payload`) less those of a document's older generation: what a process sees
    between another process's two operations of a replacement (a reader of replicas)."""
    best: dict[DocumentKey, int] = {}
    for hit in hits:
        key = document_key(hit.payload)
        if key is not None:
            best[key] = max(best.get(key, NONE), generation_of(hit.payload))
    return [
        hit
        for hit in hits
        if (key := document_key(hit.payload)) is None or generation_of(hit.payload) == best[key]
    ]


@dataclass
class Torn:
    """A document holding more than one generation: a replacement cut short."""

    key: DocumentKey
    generations: dict[int, list[str]]  # generation -> point ids

    @property
    def kept(self) -> int:
        return max(self.generations)

    @property
    def doomed(self) -> list[str]:
        """The points of every generation but the newest."""
        return sorted(
            pid for gen, ids in self.generations.items() if gen != self.kept for pid in ids
        )

    def describe(self) -> str:
        origin, name = self.key
        what = {FROM_FILE: f"kb file {name}", FROM_SOURCE: f"synced document {name}"}.get(
            origin, f"source '{name}'"
        )
        sizes = ", ".join(
            f"{len(self.generations[gen])} chunks of {'no generation' if gen == NONE else gen}"
            for gen in sorted(self.generations, reverse=True)
        )
        return f"{what} holds {len(self.generations)} versions ({sizes})"


@dataclass
class VersionIndex:
    """Point ids per document and generation, gathered from payloads."""

    documents: dict[DocumentKey, dict[int, list[str]]] = field(default_factory=dict)

    def add(self, pid: str, payload: dict[str, Any]) -> None:
        key = document_key(payload)
        if key is not None:
            gens = self.documents.setdefault(key, {})
            gens.setdefault(generation_of(payload), []).append(pid)

    def torn(self) -> list[Torn]:
        return [Torn(key, gens) for key, gens in sorted(self.documents.items()) if len(gens) > 1]


def find_torn(store: Store, physical: str) -> list[Torn]:
    """Every document of a physical collection that holds more than one generation."""
    index = VersionIndex()
    for record in store.iter_records(physical, fields=FIELDS):
        index.add(record.id, record.payload)
    return index.torn()


def keep_newest(store: Store, physical: str) -> list[Torn]:
    """Complete the replacements a crash cut short: delete every torn document's points but its
    newest generation's (the caller holds the collection's locks: Collection.recover)."""
    torn = find_torn(store, physical)
    doomed = tuple(pid for document in torn for pid in document.doomed)
    if doomed:
        store.delete(physical, Selector(ids=doomed))
    return torn
