"""The web source's one way to the network: only the hosts its block names (redirects included),
never a private, loopback or link-local address unless `allow_private` (the address checked is the
one connected to: no second lookup for a rebinding name to change), a polite rate per host,
429 and 5xx retried with backoff and Retry-After, a cap on a page's size and on redirects, and
no header of the hub's own (its keys stay home): a user agent that names the hub, and the
validators of a conditional request."""

from __future__ import annotations

import email.utils
import ipaddress
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from rag_api import version

USER_AGENT = f"rag-hub/{version()} (knowledge base sync; robots.txt obeyed)"
AGENT_TOKEN = "rag-hub"  # what robots.txt groups name us by
RETRIED = {429, 500, 502, 503, 504}
TRIES = 4  # a request, then up to three retries
BACKOFF_S = 0.5  # the first retry's wait (doubled each time, with jitter)
LONGEST_WAIT_S = 60.0  # a Retry-After beyond this fails the page now; the next sync tries again
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
CHUNK = 64 * 1024


class FetchError(Exception):
    """A page that could not be fetched; `status` when a server answered (the page is the
    trouble, not the site: too large, redirected too often, an error status after retries)."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass
class Page:
    url: str  # where it was found, after redirects
    status: int  # 200, or 304 (not modified: no body)
    headers: httpx.Headers
    body: bytes


class Fetcher:
    """GETs for one sync of one source; thread-safe (the crawl fetches `concurrency` at once)."""

    def __init__(
        self,
        hosts: set[str],
        *,
        allow_private: bool = False,
        rate: float = 2.0,
        user_agent: str = USER_AGENT,
        max_bytes: int,
        max_redirects: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hosts = {host.lower() for host in hosts}
        self.allow_private = allow_private
        self.interval = 1.0 / rate
        self.user_agent = user_agent
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.requests = 0  # requests sent (retries and redirects included)
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}  # host -> when its next request may go
        self._intervals: dict[str, float] = {}  # host -> its own (a robots.txt Crawl-delay)
        self._clients: dict[str, httpx.Client] = {}
        self._addresses: dict[tuple[str, int], str] = {}

    def allowed(self, url: str) -> bool:
        """Whether `url` is on a host this source may fetch from."""
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.hosts

    def slow_down(self, host: str, seconds: float) -> None:
        """Ask `host` at most once every `seconds` (its robots.txt's Crawl-delay)."""
        with self._lock:
            self._intervals[host] = max(seconds, self.interval)

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> Page:
        """The page at `url`, following redirects within the allowed hosts; FetchError when it
        cannot be had (the status of the server's last answer, if any)."""
        for _ in range(self.max_redirects + 1):
            if not self.allowed(url):
                raise FetchError(f"{url} is not on a host this source names (hosts:)")
            response = self._send(url, headers or {})
            if response.status in (301, 302, 303, 307, 308):
                location = response.headers.get("location")
                if not location:
                    raise FetchError(f"{url} redirects nowhere", response.status)
                url = _without_fragment(urljoin(url, location))
                continue
            return response
        raise FetchError(f"more than {self.max_redirects} redirects from {url}", 301)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    # --- one request, retried ---------------------------------------------------------------

    def _send(self, url: str, headers: Mapping[str, str]) -> Page:
        waited = 0.0
        for attempt in range(TRIES):
            self._take_turn(urlsplit(url).hostname or "")
            try:
                page = self._once(url, headers)
            except httpx.TransportError as exc:
                failure, wait = FetchError(f"{url}: {_transport(exc)}"), None
            else:
                if page.status not in RETRIED:
                    return page
                failure = FetchError(f"{url} answered {page.status}", page.status)
                wait = retry_after(page.headers.get("retry-after"))
            if attempt == TRIES - 1:
                break
            if wait is None:
                wait = BACKOFF_S * 2**attempt * (1 + random.random() / 2)
            if wait > LONGEST_WAIT_S or waited + wait > 2 * LONGEST_WAIT_S:
                raise FetchError(f"{failure.reason} (asked to wait {wait:.0f} s)", failure.status)
            self._sleep(wait)
            waited += wait
        raise failure

    def _once(self, url: str, headers: Mapping[str, str]) -> Page:
        with self._lock:
            self.requests += 1
        client = self._client(urlsplit(url).hostname or "")
        with client.stream("GET", url, headers=dict(headers)) as response:
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.max_bytes:
                raise FetchError(f"{url} is larger than the {self.max_bytes} byte limit", 200)
            body = bytearray()
            if response.status_code == 200:
                for piece in response.iter_bytes(CHUNK):
                    body += piece
                    if len(body) > self.max_bytes:
                        raise FetchError(
                            f"{url} is larger than the {self.max_bytes} byte limit", 200
                        )
            return Page(url, response.status_code, response.headers, bytes(body))

    def _take_turn(self, host: str) -> None:
        """Wait for this host's next slot: one request every 1/rate seconds per host."""
        with self._lock:
            now = self._clock()
            at = max(now, self._next.get(host, now))
            self._next[host] = at + self._intervals.get(host, self.interval)
        if at > now:
            self._sleep(at - now)

    def _client(self, host: str) -> httpx.Client:
        """A client per host (a TLS connection is never shared between two names on one
        address), connecting only to the address checked."""
        with self._lock:
            client = self._clients.get(host)
            if client is None:
                transport = _Checked(self)
                client = httpx.Client(
                    transport=transport,
                    headers={"User-Agent": self.user_agent},
                    timeout=TIMEOUT,
                    follow_redirects=False,
                    trust_env=False,  # no proxy or netrc credentials of the hub's environment
                )
                self._clients[host] = client
            return client

    def address(self, host: str, port: int) -> str:
        """The address to connect to for host:port, looked up once a sync; FetchError for an
        address the source may not reach."""
        with self._lock:
            known = self._addresses.get((host, port))
        if known is not None:
            return known
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpx.ConnectError(f"cannot resolve {host}: {exc.strerror or exc}") from exc
        addresses = [info[4][0] for info in infos]
        if not self.allow_private:
            for address in addresses:
                if not ipaddress.ip_address(address.split("%")[0]).is_global:
                    raise FetchError(
                        f"{host} is at {address}, a private, loopback or link-local address: "
                        "refused (set allow_private: true for an intranet site)"
                    )
        with self._lock:
            self._addresses[(host, port)] = addresses[0]
        return addresses[0]


class _Checked(httpx.HTTPTransport):
    """Connects to the address the fetcher checked, the name kept for TLS and the Host header."""

    def __init__(self, fetcher: Fetcher) -> None:
        super().__init__(retries=0)
        self.fetcher = fetcher

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        address = self.fetcher.address(host, port)
        request.extensions = {**request.extensions, "sni_hostname": host}
        request.url = request.url.copy_with(host=address)
        return super().handle_request(request)


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks for (a number, or an HTTP date); None without one."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def conditional(version: Mapping[str, Any]) -> dict[str, str]:
    """The headers that ask for a page only if it changed since `version` was read."""
    headers = {}
    if version.get("etag"):
        headers["If-None-Match"] = version["etag"]
    if version.get("last_modified"):
        headers["If-Modified-Since"] = version["last_modified"]
    return headers


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def _transport(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:200]
