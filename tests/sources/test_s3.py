"""The s3 source against moto's S3 server on loopback through boto3: exactly the objects under
the prefix, an unchanged re-sync that reads no object, changes that read only what changed, a
listing that fails removing nothing, and credentials that are missing named."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from rag_api.errors import SourceUnavailable
from tests.conftest import LOCAL_ENGINES
from tests.sources.conftest import documents, sync
from tests.support.s3 import KEY_ID, SECRET, S3Server

OBJECTS = {
    "kb/guide.md": b"# Guide\n\nThe lantern protocol rotates keys every day at noon.\n",
    "kb/faq.txt": b"Refunds are possible within 30 days of purchase, by the workspace owner.\n",
    "kb/team/roster.csv": b"name,role\nAda,owner\nGrace,editor\n",
    "kb/page.html": b"<html><body><nav>Menu</nav><h1>Status</h1><p>All systems run.</p></body></html>",
    "kb/logo.gif": b"GIF89a",  # a type the hub does not read: not indexed, not reported
    "kb/empty-folder/": b"",
    "other/elsewhere.md": b"# Elsewhere\n\nNot under the prefix.\n",
}


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def bucket(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A bucket of its own holding OBJECTS; the keys in the variables the block names."""
    name = f"kb-{uuid.uuid4().hex[:12]}"
    client = s3.client()
    client.create_bucket(Bucket=name)
    for key, data in OBJECTS.items():
        client.put_object(Bucket=name, Key=key, Body=data)
    monkeypatch.setenv("TEST_S3_KEY", KEY_ID)
    monkeypatch.setenv("TEST_S3_SECRET", SECRET)
    return name


def s3_block(s3: S3Server, bucket: str, **settings: object) -> dict[str, object]:
    block = {
        "name": "files",
        "kind": "s3",
        "bucket": bucket,
        "prefix": "kb/",
        "endpoint_url": s3.url,
        "region": "us-east-1",
        "access_key_env": "TEST_S3_KEY",
        "secret_key_env": "TEST_S3_SECRET",
        "link": "https://files.example.com/{bucket}/{key}",
    }
    return {**block, **settings}


KEYS = {"kb/guide.md", "kb/faq.txt", "kb/team/roster.csv", "kb/page.html"}


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_the_first_sync_reads_every_object_under_the_prefix(engine, s3, bucket, source_hub) -> None:
    hub = source_hub(s3_block(s3, bucket), engine=engine)
    report = sync(hub)
    held = documents(hub)
    assert set(held) == {f"files:{key}" for key in KEYS}
    assert report.indexed == 4 and report.skipped == {} and report.bytes > 0
    roster = held["files:kb/team/roster.csv"]
    assert roster[0].url == f"https://files.example.com/{bucket}/kb/team/roster.csv"
    assert "Grace" in roster[0].text and roster[0].metadata == {"rows": "2-3"}


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_an_unchanged_resync_reads_no_object(engine, s3, bucket, source_hub) -> None:
    hub = source_hub(s3_block(s3, bucket), engine=engine)
    sync(hub)
    reads = s3.gets()
    again = sync(hub)
    assert s3.gets() == reads
    assert again.unchanged == 4 and again.indexed == 0 and again.stats.embedded == 0


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
@pytest.mark.slow
def test_changed_deleted_and_added_objects_change_exactly_those(
    engine, s3, bucket, source_hub
) -> None:
    hub = source_hub(s3_block(s3, bucket), engine=engine)
    sync(hub)
    before = documents(hub)
    client = s3.client()
    client.put_object(Bucket=bucket, Key="kb/faq.txt", Body=b"Refunds: within 60 days now.\n")
    client.delete_object(Bucket=bucket, Key="kb/page.html")
    client.put_object(Bucket=bucket, Key="kb/new.md", Body=b"# New\n\nA new policy on badges.\n")
    reads = dict(s3.counts)

    report = sync(hub)
    after = documents(hub)
    read_now = {k for k, n in s3.counts.items() if n != reads.get(k, 0) and k[0] == "get"}
    assert read_now == {("get", "kb/faq.txt"), ("get", "kb/new.md")}
    assert report.indexed == 2 and report.removed == ["kb/page.html"]
    assert set(after) == {f"files:{k}" for k in KEYS - {"kb/page.html"} | {"kb/new.md"}}
    assert "60 days" in after["files:kb/faq.txt"][0].text
    for name in ("files:kb/guide.md", "files:kb/team/roster.csv"):
        assert [c.raw for c in after[name]] == [c.raw for c in before[name]]


def test_a_listing_that_fails_removes_nothing(s3, bucket, source_hub) -> None:
    hub = source_hub(s3_block(s3, bucket))
    sync(hub)
    before = documents(hub)
    s3.refuse = lambda method, path, query: "list-type" in query
    try:
        with pytest.raises(SourceUnavailable, match="listing failed: AccessDenied"):
            sync(hub)
    finally:
        s3.refuse = lambda method, path, query: False
    assert documents(hub) == before


def test_an_emptied_prefix_is_held_until_pruned(s3, bucket, source_hub) -> None:
    hub = source_hub(s3_block(s3, bucket))
    sync(hub)
    client = s3.client()
    for key in KEYS:
        client.delete_object(Bucket=bucket, Key=key)
    held = sync(hub)
    assert "came back empty" in held.held and not held.removed
    assert len(documents(hub)) == 4
    pruned = sync(hub, prune=True)
    assert len(pruned.removed) == 4 and documents(hub) == {}


def test_missing_credentials_are_named(s3, bucket, source_hub, monkeypatch, caplog) -> None:
    monkeypatch.delenv("TEST_S3_SECRET")
    hub = source_hub(s3_block(s3, bucket))
    with pytest.raises(
        SourceUnavailable, match=r"TEST_S3_SECRET \(its secret_key_env\) is not set"
    ):
        sync(hub)
    for variable in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    chain = source_hub(
        s3_block(s3, bucket, access_key_env=None, secret_key_env=None), engine="memory"
    )
    with pytest.raises(SourceUnavailable, match="no credentials: name the variables"):
        sync(chain)
    assert SECRET not in caplog.text
    assert documents(chain) == {}
