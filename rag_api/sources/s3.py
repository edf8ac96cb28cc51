"""An S3-compatible bucket as a source (AWS, MinIO, R2, Ceph...): its objects under a prefix, each
object's key its document's key. The listing says what changed (an object's ETag and size), so
only new and changed objects are downloaded, `concurrency` at once; an object gone from a whole
listing is removed. Credentials come from the environment variables the block names, else the
standard chain; they are never logged (botocore keeps them out of its messages)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from rag_api.config.sources import S3Source
from rag_api.errors import SourceUnavailable
from rag_api.indexing.kb import QUIET_SKIPS, ignore_reason
from rag_api.sources.base import (
    Document,
    Failed,
    Item,
    Known,
    Skipped,
    Source,
    SourceContext,
    Unchanged,
    fetched,
)

NO_CREDENTIALS = (
    "no credentials: name the variables that hold them in the source's block "
    "(access_key_env, secret_key_env), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a "
    "profile, or run where an instance role gives them"
)


class Bucket(Source):
    cfg: S3Source

    def __init__(self, cfg: S3Source, context: SourceContext) -> None:
        super().__init__(cfg, context)
        self.where = f"s3 source '{cfg.name}' (bucket {cfg.bucket})"
        self.client = self._client()
        self.pool = ThreadPoolExecutor(cfg.concurrency, thread_name_prefix="rag-s3")

    def scan(self, known: Mapping[str, Known]) -> Iterator[Item]:
        listing: list[tuple[str, dict[str, str]]] = []
        for key, version, size in self._objects():
            reason = ignore_reason(key)
            if reason is None and size > self.context.max_bytes:
                reason = f"larger than the {self.context.max_bytes} byte limit ({size} bytes)"
            if reason is None:
                listing.append((key, version))
            elif reason not in QUIET_SKIPS and reason != "hidden":
                yield Skipped(key, reason)
        self.context.expect(len(listing))
        wanted = []
        for key, version in listing:
            held = known.get(key)
            if held is not None and dict(held.version) == version:
                yield Unchanged(key)
            else:
                wanted.append((key, version))
        yield from fetched(self.pool, self._download, wanted, 2 * self.cfg.concurrency)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.client.close()

    def _objects(self) -> Iterator[tuple[str, dict[str, str], int]]:
        """Every object under the prefix (key, version, size); SourceUnavailable if the listing
        fails at any page."""
        pages = self.client.get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.cfg.bucket, Prefix=self.cfg.prefix):
                for entry in page.get("Contents", []):
                    key = entry["Key"]
                    if key.endswith("/"):
                        continue  # a "folder" marker
                    etag = str(entry.get("ETag", "")).strip('"')
                    yield key, {"etag": etag, "size": str(entry["Size"])}, int(entry["Size"])
        except Exception as exc:
            raise self._unavailable(exc) from exc

    def _download(self, listed: tuple[str, dict[str, str]]) -> Item:
        key, version = listed
        try:
            response = self.client.get_object(Bucket=self.cfg.bucket, Key=key)
            body = response["Body"]
            data = body.read(self.context.max_bytes + 1)
            body.close()
        except Exception as exc:
            return Failed(key, _message(exc))
        if len(data) > self.context.max_bytes:
            return Skipped(key, f"larger than the {self.context.max_bytes} byte limit")
        suffix = PurePosixPath(key).suffix.lower()
        return Document(key, data, suffix, version, url=self._link(key))

    def _link(self, key: str) -> str | None:
        template = self.cfg.link
        return template.format(bucket=self.cfg.bucket, key=quote(key)) if template else None

    def _client(self) -> Any:
        import boto3  # ~0.3 s: only where an s3 source syncs
        from botocore.config import Config

        cfg = self.cfg
        credentials: dict[str, str] = {}
        for field, block, name in (
            ("aws_access_key_id", "access_key_env", cfg.access_key_env),
            ("aws_secret_access_key", "secret_key_env", cfg.secret_key_env),
            ("aws_session_token", "session_token_env", cfg.session_token_env),
        ):
            if name is not None:
                if not os.environ.get(name):
                    raise SourceUnavailable(
                        self.where, f"the environment variable {name} (its {block}) is not set"
                    )
                credentials[field] = os.environ[name]
        session = boto3.session.Session(profile_name=cfg.profile, **credentials)
        region = cfg.region or session.region_name or "us-east-1"
        config = Config(
            retries={"mode": "standard", "max_attempts": 5},  # 429, 5xx, throttling: backoff
            max_pool_connections=max(10, cfg.concurrency),
            connect_timeout=10,
            read_timeout=60,
        )
        client = session.client(
            "s3", endpoint_url=cfg.endpoint_url, region_name=region, config=config
        )
        if session.get_credentials() is None:
            raise SourceUnavailable(self.where, NO_CREDENTIALS)
        return client

    def _unavailable(self, exc: Exception) -> SourceUnavailable:
        return SourceUnavailable(self.where, f"listing failed: {_message(exc)}")


def _message(exc: Exception) -> str:
    """botocore's own sentence (an error code and message from the server, or what failed)."""
    error = getattr(exc, "response", {}).get("Error", {}) if hasattr(exc, "response") else {}
    if error.get("Code"):
        return f"{error['Code']}: {error.get('Message') or 'no message'}"
    return str(exc) or type(exc).__name__
