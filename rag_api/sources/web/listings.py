"""What a site says of itself: robots.txt (per host, obeyed) and sitemaps (index files and gzip
too), each fetched with the validators of the last sync, so an unchanged one costs a 304."""

from __future__ import annotations

import gzip
import logging
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from rag_api.sources.web.fetch import AGENT_TOKEN, Fetcher, FetchError, conditional
from rag_api.sources.web.pages import normalize

log = logging.getLogger("rag_api.sources.web")
MAX_SITEMAPS = 1000  # sitemap files read from one index (and its indexes) in one sync
MAX_INDEX_DEPTH = 3


class Cached:
    """A listing file fetched with the validators it had last time (kept in the source's state
    under `cache`): its text as it is now, unchanged or not."""

    def __init__(self, fetcher: Fetcher, cache: dict[str, Any]) -> None:
        self.fetcher = fetcher
        self.cache = cache  # url -> {"etag", "last_modified", "text"}
        self.used: set[str] = set()

    def text(self, url: str) -> str | None:
        """The file's text; None when it does not exist (4xx); FetchError otherwise."""
        self.used.add(url)
        kept = self.cache.get(url)
        page = self.fetcher.get(url, conditional(kept) if kept else None)
        if page.status == 304 and kept is not None:
            return kept["text"]
        if 400 <= page.status < 500:
            self.cache.pop(url, None)
            return None
        if page.status != 200:
            raise FetchError(f"{url} answered {page.status}", page.status)
        text = _decoded(page.body, self.fetcher.max_bytes)
        self.cache[url] = {
            "etag": page.headers.get("etag"),
            "last_modified": page.headers.get("last-modified"),
            "text": text,
        }
        return text

    def forget_unused(self) -> None:
        for url in set(self.cache) - self.used:
            del self.cache[url]


class Robots:
    """robots.txt per host, read once a sync: a missing one (4xx) allows everything; one that
    cannot be read (5xx, no answer) allows nothing on that host, as RFC 9309 says."""

    def __init__(self, files: Cached) -> None:
        self.files = files
        self._parsers: dict[str, RobotFileParser | None] = {}  # None: unreachable
        self.unreachable: dict[str, str] = {}  # host -> why

    def allows(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._parsers:
            self._parsers[origin] = self._read(origin)
        parser = self._parsers[origin]
        return parser is not None and parser.can_fetch(AGENT_TOKEN, url)

    def _read(self, origin: str) -> RobotFileParser | None:
        parser = RobotFileParser()
        try:
            text = self.files.text(f"{origin}/robots.txt")
        except FetchError as exc:
            self.unreachable[origin] = exc.reason
            log.warning("%s/robots.txt cannot be read (%s): nothing fetched there", origin, exc)
            return None
        parser.parse((text or "").splitlines())
        delay = parser.crawl_delay(AGENT_TOKEN)
        if delay:
            self.files.fetcher.slow_down(urlsplit(origin).hostname or "", float(delay))
        return parser


@dataclass(frozen=True)
class Listed:
    url: str
    lastmod: str | None = None


def sitemap_urls(files: Cached, url: str, limit: int) -> list[Listed]:
    """The pages a sitemap lists (following index files): at most `limit`, and one more when it
    lists more (the walk then says it stopped short); FetchError or ValueError when a sitemap
    cannot be read: the listing is not whole."""
    found: dict[str, Listed] = {}
    todo = [(url, 0)]
    read = 0
    while todo and len(found) <= limit:
        current, depth = todo.pop(0)
        read += 1
        if read > MAX_SITEMAPS:
            raise ValueError(f"more than {MAX_SITEMAPS} sitemap files under {url}")
        text = files.text(current)
        if text is None:
            raise FetchError(f"sitemap {current} does not exist")
        root = _xml(text, current)
        if _local(root.tag) == "sitemapindex":
            if depth >= MAX_INDEX_DEPTH:
                raise ValueError(
                    f"sitemap indexes nested deeper than {MAX_INDEX_DEPTH} at {current}"
                )
            todo += [(loc, depth + 1) for loc, _ in _entries(root, "sitemap")]
        elif _local(root.tag) == "urlset":
            for loc, lastmod in _entries(root, "url"):
                found.setdefault(loc, Listed(loc, lastmod))
        else:
            raise ValueError(f"{current} is not a sitemap (its root is <{_local(root.tag)}>)")
    return list(found.values())[: limit + 1]


def _entries(root: ET.Element, kind: str) -> list[tuple[str, str | None]]:
    entries = []
    for element in root:
        if _local(element.tag) != kind:
            continue
        fields = {_local(child.tag): (child.text or "").strip() for child in element}
        if fields.get("loc"):
            entries.append((normalize(fields["loc"]), fields.get("lastmod") or None))
    return entries


def _xml(text: str, url: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"sitemap {url} is not valid XML ({exc})") from exc


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _decoded(body: bytes, max_bytes: int) -> str:
    """A listing file's text: gunzipped when it is gzip (a sitemap.xml.gz), within `max_bytes`."""
    if body[:2] == b"\x1f\x8b":
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            body = inflate.decompress(body, max_bytes + 1)
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise FetchError(f"a gzip file that cannot be read ({exc})") from exc
        if len(body) > max_bytes:
            raise FetchError(f"unpacks to more than the {max_bytes} byte limit")
    return body.decode("utf-8", errors="replace")
