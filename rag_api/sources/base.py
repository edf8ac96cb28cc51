"""What a kind of source implements, built in or a plugin's (docs/sources.md): `Source.scan` says
what the source holds now, one item a document, and reads only what changed since the versions
the collection holds (`known`); the sync (rag_api.sources.sync) does the rest: reading, chunking,
embedding, writing, and removing with evidence."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Known:
    """What the collection holds of one of the source's documents: the version the source gave
    when it was read, and its link. A document held only in part is not known: it is read again."""

    version: Mapping[str, str]
    url: str | None = None


@dataclass(slots=True)
class Document:
    """A document the source read: new, or changed since its known version."""

    key: str  # its name within the source (a URL, an object key, a path): unique there
    data: bytes
    suffix: str  # the reader it goes through, as a kb file's suffix would choose (".html", ".pdf")
    version: dict[str, str]  # what the next scan compares (known[key].version), strings only
    url: str | None = None  # where a person reads it
    title: str | None = None  # its title, where the source knows it (a page's <title>)
    renamed_from: str | None = None  # the key it had before: that document's vectors are reused
    content_only: bool = False  # a web page: its furniture (nav, footer, banners) is left out


@dataclass(frozen=True, slots=True)
class Unchanged:
    """The document is there as the collection holds it: nothing to read."""

    key: str


@dataclass(frozen=True, slots=True)
class Failed:
    """The document is there but could not be read now: it keeps what the collection holds."""

    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Gone:
    """Evidence the document was deleted (a 404 twice, a deletion in a Git diff): removed, within
    the rule that a mass of removals at once needs confirming."""

    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """Listed, but not a document the hub reads (its type, its size): not indexed."""

    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Incomplete:
    """The listing is not whole (cut short, a part failed): no document is removed for being
    absent from it."""

    reason: str


Item = Document | Unchanged | Failed | Gone | Skipped | Incomplete


@dataclass
class SourceContext:
    """What a source is given for one sync."""

    collection: str
    folder: Path  # a folder of its own that outlives the sync (a Git mirror)
    max_bytes: int  # a document's cap (RAG_MAX_FILE_BYTES)
    # the source's own state (JSON values: a cursor, a commit, a crawl's links): kept where the
    # collection's state is kept, saved after a sync whose scan ended
    state: dict[str, Any] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)  # the hub is stopping
    expect: Callable[[int], None] = lambda total: None  # how many documents it will list


class Source(ABC):
    """A kind of source, made for each sync with its block of collections.yaml (`cfg`) and its
    context. A plugin's entry point (group rag_hub.sources) is a `rag_api.providers.Provider`
    whose factory makes one: `Provider(MySource, remote=True)`."""

    def __init__(self, cfg: Any, context: SourceContext) -> None:
        self.cfg = cfg
        self.context = context

    @abstractmethod
    def scan(self, known: Mapping[str, Known]) -> Iterator[Item]:
        """Every document the source holds now, one item each: `Unchanged` where its version is
        the known one, a `Document` (read) where it is new or changed, `Failed`, `Gone` or
        `Skipped` where it says so, and `Incomplete` if the listing is not whole. An exception
        means the listing failed: what was read is kept, nothing is removed."""

    def close(self) -> None:  # noqa: B027 (a source that holds nothing has nothing to do)
        """Let go of what the scan held (connections, pools)."""


def fetched(
    pool: ThreadPoolExecutor, fetch: Callable[[T], R], items: Iterable[T], limit: int
) -> Iterator[R]:
    """`fetch` of each item, run on the pool's threads and given back in order, at most `limit`
    ahead of the one being taken (memory stays bounded, whatever the listing)."""
    ahead: deque[Future[R]] = deque()
    try:
        for item in items:
            ahead.append(pool.submit(fetch, item))
            if len(ahead) >= limit:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    finally:
        for future in ahead:
            future.cancel()
