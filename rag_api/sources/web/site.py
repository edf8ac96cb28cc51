"""A web site as a source: the pages of its sitemap and/or those reached from a start URL by links
(within `max_depth` and `max_pages`, on the hosts the block names, as robots.txt allows), each
fetched at most `concurrency` at once and asked for only if it changed: a sitemap's `lastmod`
that did not move costs no request, a page that did not change costs a 304.

A page's key is its canonical URL (`<link rel=canonical>` on an allowed host), else the URL it
was found at after redirects. The state kept between syncs: each page's links (a page that
answered 304 still leads to its links), the URLs that led to another key, the pages that answered
404 or 410 once (removed when they do again), and robots.txt and the sitemaps with their
validators."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from urllib.parse import urlsplit

from rag_api.config.sources import WebSource
from rag_api.errors import SourceUnavailable
from rag_api.sources.base import (
    Document,
    Failed,
    Gone,
    Incomplete,
    Item,
    Known,
    Skipped,
    Source,
    SourceContext,
    Unchanged,
)
from rag_api.sources.web.fetch import USER_AGENT, Fetcher, FetchError, Page, conditional
from rag_api.sources.web.listings import Cached, Robots, sitemap_urls
from rag_api.sources.web.pages import admitted, normalize, page_info, suffix_of

log = logging.getLogger("rag_api.sources.web")
GONE = (404, 410)
MISSES_TO_REMOVE = 2  # a page that answers 404 or 410 this many syncs in a row is removed
FAILURES_TO_STOP = 8  # fetches failed in a row (each after its retries): the site is down


class WebSite(Source):
    cfg: WebSource

    def __init__(self, cfg: WebSource, context: SourceContext) -> None:
        super().__init__(cfg, context)
        hosts = {urlsplit(u).hostname or "" for u in (cfg.url, cfg.sitemap) if u} | set(cfg.hosts)
        self.fetcher = Fetcher(
            hosts,
            allow_private=cfg.allow_private,
            rate=cfg.rate,
            user_agent=cfg.user_agent or USER_AGENT,
            max_bytes=cfg.max_bytes or context.max_bytes,
            max_redirects=cfg.max_redirects,
        )
        self.pool = ThreadPoolExecutor(cfg.concurrency, thread_name_prefix="rag-web")

    def scan(self, known: Mapping[str, Known]) -> Iterator[Item]:
        return _Crawl(self, known).run()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.fetcher.close()


class _Crawl:
    """One sync's walk of the site."""

    def __init__(self, site: WebSite, known: Mapping[str, Known]) -> None:
        self.cfg = site.cfg
        self.site = site
        self.known = known
        state = site.context.state
        self.links: dict[str, list[str]] = state.setdefault("links", {})
        self.misses: dict[str, int] = state.setdefault("misses", {})
        self.aliases: dict[str, str] = state.setdefault("aliases", {})
        self.files = Cached(site.fetcher, state.setdefault("listings", {}))
        self.robots = Robots(self.files)
        self.crawling = self.cfg.url is not None  # links are followed only from a start URL
        self.frontier: deque[tuple[str, int, str | None]] = deque()
        self.queued: set[str] = set()
        self.listed: set[str] = set()  # keys yielded this sync
        self.incomplete: list[str] = []
        self.answered = 0  # requests a server answered
        self.failures: list[str] = []
        self.in_a_row = 0  # fetches failed since the last one a server answered

    def run(self) -> Iterator[Item]:
        if self.cfg.sitemap:
            try:
                for listed in sitemap_urls(self.files, self.cfg.sitemap, self.cfg.max_pages):
                    self.offer(listed.url, 0, listed.lastmod)
            except (FetchError, ValueError) as exc:
                if not self.crawling:
                    raise SourceUnavailable(f"web source '{self.cfg.name}'", str(exc)) from exc
                self.incomplete.append(f"the sitemap could not be read: {exc}")
        if self.cfg.url:
            self.offer(normalize(self.cfg.url), 0)
        if not self.crawling:
            self.site.context.expect(len(self.frontier))
        yield from self.walk()
        failures = self.failures + list(self.robots.unreachable.values())
        if self.answered == 0 and failures:  # not one page: the site, not a page, is the trouble
            raise SourceUnavailable(f"web source '{self.cfg.name}'", failures[0])
        if self.stopped:
            self.incomplete.append(
                f"{self.in_a_row} pages in a row could not be fetched (the last: "
                f"{self.failures[-1]}): the walk stopped"
            )
        elif self.frontier:
            self.incomplete.append(
                f"stopped at max_pages ({self.cfg.max_pages}): {len(self.frontier)} more pages "
                "not visited"
            )
        self.incomplete += [
            f"{origin}/robots.txt cannot be read ({why})"
            for origin, why in self.robots.unreachable.items()
        ]
        for reason in self.incomplete:
            yield Incomplete(reason)
        if not self.incomplete:
            self.forget_unlisted()

    def walk(self) -> Iterator[Item]:
        """Visit the frontier, `concurrency` fetches at once, until it is empty, `max_pages`
        were visited or the site stopped answering."""
        fetcher = self.site.fetcher
        visited = 0
        flying: dict[Future[Page], tuple[str, int, str | None]] = {}
        try:
            while (self.frontier or flying) and not self.stopped:
                while self.frontier and len(flying) < self.cfg.concurrency:
                    if visited >= self.cfg.max_pages:
                        break
                    url, depth, lastmod = self.frontier.popleft()
                    if not self.robots.allows(url):
                        continue
                    visited += 1
                    key = self.aliases.get(url, url)
                    held = self.known.get(key)
                    if held is not None and self.unmoved(key, held, lastmod):
                        yield from self.unchanged(key, depth)
                        continue
                    headers = conditional(held.version) if held is not None else {}
                    flying[self.site.pool.submit(fetcher.get, url, headers)] = (url, depth, lastmod)
                if not flying:
                    break
                done, _ = wait(flying, return_when=FIRST_COMPLETED)
                for future in done:
                    url, depth, lastmod = flying.pop(future)
                    yield from self.answer(future, url, depth, lastmod)
        finally:
            for future in flying:
                future.cancel()

    @property
    def stopped(self) -> bool:
        """The site stopped answering: the walk ends rather than wait on every page left."""
        return self.in_a_row >= FAILURES_TO_STOP

    def offer(self, url: str, depth: int, lastmod: str | None = None) -> None:
        """Queue a page to visit, if the block admits it and it was not queued already."""
        if url in self.queued or depth > self.cfg.max_depth:
            return
        if not self.site.fetcher.allowed(url) or not admitted(
            url, self.cfg.include, self.cfg.exclude
        ):
            return
        self.queued.add(url)
        self.frontier.append((url, depth, lastmod))

    def follow(self, key: str, depth: int) -> None:
        for link in self.links.get(key, []) if self.crawling else []:
            self.offer(link, depth + 1)

    def unmoved(self, key: str, held: Known, lastmod: str | None) -> bool:
        """A page whose sitemap `lastmod` is the one it was read at (and whose links are known,
        when crawling): not asked for at all."""
        same = lastmod is not None and held.version.get("lastmod") == lastmod
        return same and (not self.crawling or key in self.links)

    def unchanged(self, key: str, depth: int) -> Iterator[Item]:
        self.misses.pop(key, None)
        self.follow(key, depth)
        if key not in self.listed:
            self.listed.add(key)
            yield Unchanged(key)

    def answer(
        self, future: Future[Page], url: str, depth: int, lastmod: str | None
    ) -> Iterator[Item]:
        """What one fetch says of its page."""
        key = self.aliases.get(url, url)
        try:
            page = future.result()
        except FetchError as exc:
            self.heard(exc.status)
            yield from self.failed(key, url, depth, exc)
            return
        self.heard(page.status)
        if page.status == 304:
            yield from self.unchanged(key, depth)
        elif page.status in GONE:
            yield from self.missing(key, page.status)
        elif page.status != 200:
            yield from self.failed(
                key, url, depth, FetchError(f"answered {page.status}", page.status)
            )
        else:
            yield from self.read(page, url, depth, lastmod)

    def heard(self, status: int | None) -> None:
        """Count a fetch's outcome: a server's answer (whatever its status: the page, not the
        site, is the trouble), or none (the site may be down)."""
        if status is None:
            self.in_a_row += 1
        else:
            self.answered += 1
            self.in_a_row = 0

    def failed(self, key: str, url: str, depth: int, exc: FetchError) -> Iterator[Item]:
        """A page that could not be had: kept if held; its links as last seen, if known (else
        the listing is not whole)."""
        self.failures.append(exc.reason)
        if key in self.known:
            self.listed.add(key)
            yield Failed(key, exc.reason)
        if self.crawling:
            if key in self.links:
                self.follow(key, depth)
            else:
                self.incomplete.append(f"{url} could not be read ({exc.reason}): its links unknown")

    def missing(self, key: str, status: int) -> Iterator[Item]:
        if key not in self.known:
            return  # a broken link to a page never indexed
        misses = self.misses[key] = self.misses.get(key, 0) + 1
        if misses >= MISSES_TO_REMOVE:
            yield Gone(key, f"answered {status} {misses} syncs in a row")
        else:
            self.listed.add(key)
            yield Failed(key, f"answered {status} (removed if it does again at the next sync)")

    def read(self, page: Page, url: str, depth: int, lastmod: str | None) -> Iterator[Item]:
        found = normalize(page.url)
        self.queued.add(found)  # reached by a redirect: not visited again
        suffix = suffix_of(page.headers.get("content-type"), found)
        if suffix is None:
            yield Skipped(
                found, f"a type the hub does not read ({page.headers.get('content-type')})"
            )
            return
        key, title, noindex = found, None, False
        if suffix == ".html":
            info = page_info(page.body, found)
            canonical = info.canonical
            if canonical and self.site.fetcher.allowed(canonical):
                key = canonical
            title, noindex = info.title, info.noindex
            if self.crawling:
                self.links[key] = [] if info.nofollow else info.links
        elif self.crawling:
            self.links[key] = []  # a file leads nowhere: its sitemap lastmod is enough
        self.follow(key, depth)
        if url != key:
            self.aliases[url] = key
        if noindex:
            yield Skipped(key, "the page asks not to be indexed (robots meta noindex)")
            return
        if key in self.listed:
            return  # another URL of a page listed already
        self.listed.add(key)
        self.misses.pop(key, None)
        version = {
            "etag": page.headers.get("etag"),
            "last_modified": page.headers.get("last-modified"),
            "lastmod": lastmod,
        }
        yield Document(
            key,
            page.body,
            suffix,
            {name: value for name, value in version.items() if value},
            url=key,
            title=title,
            content_only=suffix == ".html",
        )

    def forget_unlisted(self) -> None:
        """After a whole listing: drop the state of pages no longer listed."""
        for table in (self.links, self.misses):
            for key in set(table) - self.listed:
                del table[key]
        for url, key in list(self.aliases.items()):
            if key not in self.listed:
                del self.aliases[url]
        self.files.forget_unused()
