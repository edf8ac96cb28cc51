"""A collection's `sources:` in collections.yaml: where its documents come from besides its kb
folder (a web site, an S3-compatible bucket, a Git repository, a plugin's kind), each validated
here; what they do with it is rag_api.sources (docs/sources.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from rag_api.providers import SOURCES
from rag_api.settings import duration_s

SOURCE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62})$")
BUILT_IN = ("web", "s3", "git")
MIN_EVERY_S = 1.0


def seconds(value: Any) -> Any:
    """`every: 30m` (s, m, h, d; a bare number is seconds) as seconds; anything else as it is,
    for pydantic to refuse."""
    return duration_s(value) if isinstance(value, str) else value


Every = Annotated[float, BeforeValidator(seconds), Field(ge=MIN_EVERY_S)]


class SourceBlock(BaseModel):
    """What every kind of source has: its name (unique in its collection, the first part of each
    of its documents' names: `name:key`), its kind, and when it syncs by itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: str
    every: Every | None = None  # none: only on demand (rag-hub sync, POST .../sync)
    # documents fetched at once (pages, objects); a page's reading and embedding go on beside them
    concurrency: Annotated[int, Field(ge=1, le=64)] = 4

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SOURCE_NAME.match(value):
            raise ValueError(
                f"source name '{value}' must be lowercase letters, digits, '-' or '_' (at most 63)"
            )
        return value


def _http_url(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{field} must be an http or https URL, not '{value}'")
    return value


class WebSource(SourceBlock):
    """A web site: pages from a start URL's links and/or a sitemap (sitemap index files too)."""

    kind: Literal["web"]
    url: str | None = None  # where the crawl starts (its links are followed)
    sitemap: str | None = None  # every page it lists (and its `lastmod`)
    # URL globs (`*` matches anything, `/` too): a page is fetched when it matches an `include`
    # (none: every page of the allowed hosts) and no `exclude`
    include: list[Annotated[str, Field(min_length=1)]] = []
    exclude: list[Annotated[str, Field(min_length=1)]] = []
    max_pages: Annotated[int, Field(ge=1, le=1_000_000)] = 1000
    max_depth: Annotated[int, Field(ge=0, le=100)] = 5  # links followed from the start URL
    hosts: list[Annotated[str, Field(min_length=1)]] = []  # more hosts to fetch from
    rate: Annotated[float, Field(gt=0, le=10_000)] = 2.0  # requests per second per host
    user_agent: str | None = None  # default: rag-hub/VERSION (+its docs)
    # fetch from private, loopback and link-local addresses (an intranet; the tests' servers)
    allow_private: bool = False
    max_bytes: Annotated[int, Field(gt=0)] | None = None  # a page's cap (RAG_MAX_FILE_BYTES)
    max_redirects: Annotated[int, Field(ge=0, le=20)] = 5

    _url = field_validator("url")(lambda v: _http_url(v, "url"))
    _sitemap = field_validator("sitemap")(lambda v: _http_url(v, "sitemap"))

    @field_validator("hosts")
    @classmethod
    def _bare_hosts(cls, value: list[str]) -> list[str]:
        for host in value:
            if "/" in host or ":" in host.strip("[]").replace("::", ""):
                raise ValueError(f"hosts are names like docs.example.com, not '{host}'")
        return [host.lower() for host in value]

    @model_validator(mode="after")
    def _somewhere_to_start(self) -> WebSource:
        if self.url is None and self.sitemap is None:
            raise ValueError("a web source needs a url (to crawl from) or a sitemap, or both")
        return self


class S3Source(SourceBlock):
    """The objects of a bucket (under a prefix) on S3 or any S3-compatible store. Credentials
    come from the environment variables named here, else the standard chain (AWS_* variables,
    ~/.aws, an instance role): never from this file."""

    kind: Literal["s3"]
    bucket: Annotated[str, Field(min_length=1)]
    prefix: str = ""
    endpoint_url: str | None = None  # MinIO, R2, Ceph...; none: AWS
    region: str | None = None
    access_key_env: str | None = None  # the variable holding the access key id
    secret_key_env: str | None = None  # ... the secret key
    session_token_env: str | None = None
    profile: str | None = None  # a profile of ~/.aws/config
    # each document's link, from `{bucket}`, `{key}` (the object's key, URL-quoted); none: no link
    link: str | None = None

    _endpoint = field_validator("endpoint_url")(lambda v: _http_url(v, "endpoint_url"))

    @model_validator(mode="after")
    def _keys_in_pairs(self) -> S3Source:
        if (self.access_key_env is None) != (self.secret_key_env is None):
            raise ValueError("access_key_env and secret_key_env go together (or neither)")
        if self.profile and self.access_key_env:
            raise ValueError("give a profile or access_key_env/secret_key_env, not both")
        return self


class GitSource(SourceBlock):
    """The files of a branch of a Git repository (an https or ssh URL, or a local path)."""

    kind: Literal["git"]
    repo: Annotated[str, Field(min_length=1)]
    branch: str | None = None  # none: the repository's default branch
    # globs of repository paths (`*` within a folder, `**` across folders); none: every file
    paths: list[Annotated[str, Field(min_length=1)]] = []
    # each document's link, from `{commit}`, `{branch}`, `{path}`; none: no link
    link: str | None = None

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        if value.startswith("-"):
            raise ValueError(f"'{value}' is not a repository URL or path")
        return value

    @field_validator("branch")
    @classmethod
    def _branch_name(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("-") or not value.strip() or ".." in value):
            raise ValueError(f"'{value}' is not a branch name")
        return value


class PluginSource(SourceBlock):
    """A kind an installed plugin adds (entry point group rag_hub.sources): its own settings,
    checked by the plugin when the hub opens."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: Annotated[str, SOURCES]

    @field_validator("kind")
    @classmethod
    def _not_built_in(cls, value: str) -> str:
        if value in BUILT_IN:  # a built-in kind's block failed its own model
            raise ValueError(f"kind '{value}' is built in")
        return value

    @property
    def settings(self) -> dict[str, Any]:
        """The block's own settings (all but the common fields)."""
        return dict(self.model_extra or {})


def _kind(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if kind in BUILT_IN else "plugin"


SourceConfig = Annotated[
    Annotated[WebSource, Tag("web")]
    | Annotated[S3Source, Tag("s3")]
    | Annotated[GitSource, Tag("git")]
    | Annotated[PluginSource, Tag("plugin")],
    Discriminator(_kind),
]


def unique_names(sources: list[Any]) -> list[Any]:
    """The sources of one collection, refused when two share a name."""
    seen: set[str] = set()
    for source in sources:
        if source.name in seen:
            raise ValueError(f"two sources are named '{source.name}'")
        seen.add(source.name)
    return sources
