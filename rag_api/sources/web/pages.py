"""What the crawl needs of a URL and a page: one spelling per URL, whether a block's patterns admit
it, which reader its type goes to, and a page's links, canonical URL, title and robots meta."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from urllib.parse import urljoin, urlsplit, urlunsplit

from rag_api.indexing.chunking import SUFFIXES

DEFAULT_PORTS = {"http": 80, "https": 443}
TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/tiff": ".tiff",
}
UNTYPED = {"", "application/octet-stream", "binary/octet-stream"}


def normalize(url: str) -> str:
    """One spelling of a URL: scheme and host in lower case, no default port, no fragment, `/`
    for an empty path; the query kept as it is."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def admitted(url: str, include: list[str], exclude: list[str]) -> bool:
    """Whether a block's URL globs admit `url`: some `include` (none: all) and no `exclude`."""
    if include and not any(fnmatchcase(url, pattern) for pattern in include):
        return False
    return not any(fnmatchcase(url, pattern) for pattern in exclude)


def suffix_of(content_type: str | None, url: str) -> str | None:
    """The reader a response goes to: by its Content-Type, else (untyped) by the URL's path;
    None for a type the hub does not read."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media in TYPES:
        return TYPES[media]
    if media not in UNTYPED:
        return None
    suffix = PurePosixPath(urlsplit(url).path).suffix.lower()
    return suffix if suffix in SUFFIXES else None


@dataclass
class PageInfo:
    links: list[str] = field(default_factory=list)  # absolute, normalized, in page order
    canonical: str | None = None
    title: str | None = None
    noindex: bool = False  # <meta name="robots" content="noindex">
    nofollow: bool = False  # ... "nofollow": its links are not followed


def page_info(html: bytes, url: str) -> PageInfo:
    """A page's links (not rel=nofollow ones), canonical URL, title and robots meta."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    base = url
    if (tag := soup.find("base", href=True)) is not None:
        base = urljoin(url, str(tag["href"]))
    info = PageInfo()
    for meta in soup.find_all("meta", attrs={"name": True, "content": True}):
        if str(meta["name"]).lower() in ("robots", "rag-hub"):
            words = {w.strip().lower() for w in str(meta["content"]).split(",")}
            info.noindex |= bool(words & {"noindex", "none"})
            info.nofollow |= bool(words & {"nofollow", "none"})
    for link in soup.find_all("link", href=True):
        if "canonical" in [str(r).lower() for r in link.get("rel") or []]:
            info.canonical = normalize(urljoin(base, str(link["href"])))
            break
    title = soup.find("title")
    if title is not None and title.get_text(strip=True):
        info.title = " ".join(title.get_text().split())[:300]
    seen: set[str] = set()
    for anchor in soup.find_all("a", href=True):
        if "nofollow" in [str(r).lower() for r in anchor.get("rel") or []]:
            continue
        target = urljoin(base, str(anchor["href"]))
        if urlsplit(target).scheme in ("http", "https"):
            target = normalize(target)
            if target not in seen:
                seen.add(target)
                info.links.append(target)
    return info
