"""A web site on loopback for the web source's tests and bench: pages with furniture (nav, cookie
banner, footer), a sitemap with lastmod, robots.txt, ETag and Last-Modified with conditional
answers, redirects, pages that become 404, and a count of every answer by path and status."""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = (
    "harbour lantern orchard meadow copper falcon glacier cedar violet summit ember willow "
    "canyon thistle marble quartz saffron juniper pebble tundra walnut zephyr basalt lagoon"
).split()
EPOCH = 1_700_000_000  # the pages' first Last-Modified


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    version: int = 1  # moves the page's ETag, Last-Modified and sitemap lastmod
    listed: bool = True  # in the sitemap (and linked from the home page)

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    @property
    def modified(self) -> float:
        return EPOCH + 3600 * self.version


def article(n: int, edit: int = 0, words: int = 120) -> str:
    """The distinct text of page n (another `edit`, another text)."""
    chosen = random.Random(f"{n}/{edit}").choices(WORDS, k=words)  # no line repeats elsewhere
    return f"Topic {n} edition {edit}: " + " ".join(chosen) + f". Fact {n}-{edit} is recorded."


def html_page(title: str, text: str, links: list[str] = (), canonical: str | None = None) -> bytes:
    """A page whose content sits among a site's furniture (nav, cookie banner, footer)."""
    head = f"<title>{title}</title>"
    if canonical:
        head += f'<link rel="canonical" href="{canonical}">'
    nav = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f"<html><head>{head}</head><body>"
        f'<nav><ul><li><a href="/">Home</a></li>{nav}</ul>Site navigation menu</nav>'
        '<div id="cookie-consent">We use cookies to improve your experience. Accept all cookies'
        "</div>"
        f"<main><h1>{title}</h1><p>{text}</p></main>"
        "<footer>Copyright Example Corp. All rights reserved. Imprint and privacy</footer>"
        "</body></html>"
    ).encode()


class Site:
    """The site: `pages` by path (edit them between syncs), `redirects`, `gone` (404 paths),
    robots.txt; `answers` counts (path, status) of every answer; `down` refuses everything."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.redirects: dict[str, str] = {}
        self.robots = "User-agent: *\nDisallow: /private/\n"
        self.answers: Counter[tuple[str, int]] = Counter()
        self.headers: list[dict[str, str]] = []  # every request's headers (names lower-cased)
        self.down_after: int | None = None  # page answers before the site goes down
        # path -> answers given before its own, first to last: (status, headers)
        self.scripted: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self._served = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- the site's content --------------------------------------------------------------

    def add(self, path: str, page: Page) -> None:
        self.pages[path] = page

    def edit(self, path: str, text: str) -> None:
        page = self.pages[path]
        page.body = html_page(path.rsplit("/", 1)[-1], text, self.links(), canonical=path)
        page.version += 1

    def links(self) -> list[str]:
        return [p for p, page in sorted(self.pages.items()) if page.listed and p != "/"]

    def bodies(self, prefix: str = "/docs/") -> int:
        """Answers with a body (200) to pages under `prefix`."""
        return sum(
            n
            for (path, status), n in self.answers.items()
            if status == 200 and path.startswith(prefix)
        )

    def sitemap(self) -> bytes:
        entries = "".join(
            f"<url><loc>{self.url}{path}</loc><lastmod>{_date(page.modified)}</lastmod></url>"
            for path, page in sorted(self.pages.items())
            if page.listed
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        ).encode()

    # --- serving ---------------------------------------------------------------------------

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            if self.down_after is not None:
                if self._served >= self.down_after:
                    return 0, {}, b""
                self._served += 1
        if self.scripted.get(path):
            with self._lock:
                status, sent = self.scripted[path].pop(0)
            return status, sent, b"scripted"
        if path == "/robots.txt":
            body = self.robots.encode()
            return self._conditional(headers, _tag(body), None, body, "text/plain")
        if path == "/sitemap.xml":
            body = self.sitemap()
            return self._conditional(headers, _tag(body), None, body, "application/xml")
        if path in self.redirects:
            return 301, {"Location": self.redirects[path]}, b""
        page = self.pages.get(path.split("?", 1)[0])
        if page is None:
            return 404, {"Content-Type": "text/plain"}, b"not found"
        return self._conditional(headers, page.etag, page.modified, page.body, page.content_type)

    def _conditional(
        self, headers: dict[str, str], etag: str, modified: float | None, body: bytes, kind: str
    ) -> tuple[int, dict[str, str], bytes]:
        sent = {"ETag": etag, "Content-Type": kind}
        if modified is not None:
            sent["Last-Modified"] = formatdate(modified, usegmt=True)
        if headers.get("if-none-match") == etag:
            return 304, sent, b""
        since = headers.get("if-modified-since")
        if since and "if-none-match" not in headers and modified is not None:
            if parsedate_to_datetime(since).timestamp() >= int(modified):
                return 304, sent, b""
        return 200, sent, body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with site._lock:
                    site.headers.append(headers)
                status, sent, body = site.answer(self.path, headers)
                if status == 0:  # down: the connection closes without an answer
                    self.close_connection = True
                    return
                with site._lock:
                    site.answers[(self.path, status)] += 1
                self.send_response(status)
                for name, value in sent.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def docs_site(site: Site, pages: int = 52) -> Site:
    """`pages` linked documentation pages, a home page, a private page robots.txt disallows, a
    redirect to a page, a text file and a page reached through a URL with a canonical link."""
    for n in range(pages):
        site.add(f"/docs/page-{n:02}.html", Page(b""))
    site.add(
        "/docs/notes.txt",
        Page(b"Plain notes: the lantern protocol rotates keys every day.\n", "text/plain"),
    )
    site.add(
        "/private/secret.html", Page(html_page("secret", "Internal payroll figures."), listed=False)
    )
    for n in range(pages):
        path = f"/docs/page-{n:02}.html"
        site.pages[path].body = html_page(f"Page {n}", article(n), site.links(), canonical=path)
    site.add(
        "/",
        Page(
            html_page(
                "Home",
                "Welcome to the docs.",
                site.links() + ["/private/secret.html", "/old.html", "/docs/page-03.html?ref=nav"],
            )
        ),
    )
    site.redirects["/old.html"] = "/docs/page-01.html"
    return site


def _tag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:16] + '"'


def _date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
