"""Sources against their baselines, measured side by side in one run (issue 58).

1. web, N local pages (a site on loopback: tests/support/site.py): the first sync against indexing
   the same pages saved as files from a kb folder (the same readers, chunks and model); then a
   re-sync with 1% of the pages edited: the requests that carried a body against the pages
   changed, and its time against the first sync's; and a re-sync with nothing changed.
2. s3, M objects on moto's S3 server with 10 changed: the bytes downloaded and the time of a
   re-sync against a full re-download (`force`: every object read again, vectors reused).

The web part embeds with the bundled MiniLM (the first sync's time is mostly embedding: what the
fetch must overlap); the s3 part with the hash embedder (what it measures is the listing and the
downloads). Run it alone on the machine: it decides nothing beside a test suite.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_sources.py --pages 1000 --objects 5000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_api.hub import Hub  # noqa: E402
from rag_api.indexing.sync import sync_collection  # noqa: E402
from scripts.evallib.hub import HASH, MINILM, written_settings  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402
from tests.support.s3 import KEY_ID, SECRET, S3Server  # noqa: E402
from tests.support.site import Page, Site, article  # noqa: E402

CHUNKING = {"size": 512, "overlap": 64}
RELATED = 8  # page n links to pages 8n+1 .. 8n+8: the crawl reaches 1,000 pages 5 links deep


def bench_page(n: int, pages: int, edit: int = 0) -> bytes:
    """A documentation page of ~2.5 KB of text, its links inside its content (so a kb folder's
    reader and the web source's read the very same chunks)."""
    children = [c for c in range(RELATED * n + 1, RELATED * (n + 1) + 1) if c < pages]
    links = "".join(f'<li><a href="/docs/page-{c:04}.html">page {c}</a></li>' for c in children)
    body = "".join(f"<p>{article(n * 10 + p, edit, words=70)}</p>" for p in range(5))
    return (
        f"<html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>{body}"
        f"<h2>Related</h2><ul>{links}</ul></main></body></html>"
    ).encode()


def collection(**entry: object) -> dict[str, object]:
    return {
        "embedder": MINILM,
        "chunking": CHUNKING,
        "llm": {"provider": "extractive"},
        **entry,
    }


def web(root: Path, pages: int) -> None:
    with Site() as site:
        site.add("/", Page(b'<html><body><a href="/docs/page-0000.html">docs</a></body></html>'))
        for n in range(pages):
            site.add(f"/docs/page-{n:04}.html", Page(bench_page(n, pages)))
        kb = root / "kb"
        kb.mkdir()
        for path, page in site.pages.items():
            if path.startswith("/docs/"):
                (kb / path.rsplit("/", 1)[1]).write_bytes(page.body)
        block = {
            "name": "site",
            "kind": "web",
            "url": f"{site.url}/",
            "sitemap": f"{site.url}/sitemap.xml",
            "max_pages": pages + 10,
            "allow_private": True,
            "rate": 10_000,  # a loopback site: the polite 2 a second would measure the sleep
        }
        models = {"model_cache": root / "models"}  # one ONNX export, made before anything is timed
        warm = Hub.open(written_settings(root / "warm", {"warm": collection()}, **models))
        warm.collection("warm").embed_documents(["warming the model up"] * 8)  # load, export
        warm.close()

        folder_settings = written_settings(
            root / "folder", {"docs": collection(kb=str(kb))}, **models
        )
        folder = Hub.open(folder_settings)
        started = time.perf_counter()
        folder_report = sync_collection(folder.collection("docs"))
        folder_s = time.perf_counter() - started
        folder.close()

        hub = Hub.open(
            written_settings(root / "web", {"docs": collection(sources=[block])}, **models)
        )
        try:
            started = time.perf_counter()
            first = hub.sources.run("docs", "site")
            first_s = time.perf_counter() - started
            assert first.indexed == pages + 1, first.as_dict()

            changed = max(1, pages // 100)
            for n in range(changed):
                page = site.pages[f"/docs/page-{n * 97 % pages:04}.html"]
                page.body, page.version = bench_page(n * 97 % pages, pages, edit=1), 2
            bodies = site.bodies("/docs/")
            started = time.perf_counter()
            resync = hub.sources.run("docs", "site")
            resync_s = time.perf_counter() - started
            with_body = site.bodies("/docs/") - bodies
            assert resync.indexed == changed, resync.as_dict()

            started = time.perf_counter()
            unchanged = hub.sources.run("docs", "site")
            unchanged_s = time.perf_counter() - started
            assert unchanged.indexed == 0
        finally:
            hub.close()
    print(f"web, {pages} pages on loopback (MiniLM, {CHUNKING['size']}-char chunks)")
    print(
        f"  kb folder, first index      {folder_s:8.1f} s  ({folder_report.stats.written} chunks)"
    )
    print(
        f"  web source, first sync      {first_s:8.1f} s  ({first.stats.written} chunks)"
        f"  {first_s / folder_s:.2f}x the folder (want <= 1.3x)"
    )
    print(
        f"  re-sync, {changed} pages edited    {resync_s:8.2f} s  {resync_s / first_s:.3f}x the first "
        f"sync (want <= 0.1x); {with_body} requests with a body = {with_body / changed:.2f}x "
        f"the pages changed (want <= 1.05x); {resync.stats.embedded} chunks embedded"
    )
    print(f"  re-sync, nothing changed    {unchanged_s:8.2f} s  ({unchanged.bytes} bytes read)")


def s3(root: Path, objects: int) -> None:
    server = S3Server()
    server.start()
    try:
        client = server.client()
        client.create_bucket(Bucket="bench")
        for n in range(objects):
            client.put_object(Bucket="bench", Key=f"kb/{n:05}.md", Body=_object(n, 0))
        block = {
            "name": "bucket",
            "kind": "s3",
            "bucket": "bench",
            "prefix": "kb/",
            "endpoint_url": server.url,
            "region": "us-east-1",
            "access_key_env": "BENCH_KEY",
            "secret_key_env": "BENCH_SECRET",
            "concurrency": 8,
        }
        os.environ.update({"BENCH_KEY": KEY_ID, "BENCH_SECRET": SECRET})
        entry = collection(embedder=HASH, sources=[block])
        hub = Hub.open(written_settings(root / "s3", {"docs": entry}))
        try:
            first = hub.sources.run("docs", "bucket")
            assert first.indexed == objects
            for n in range(10):
                client.put_object(
                    Bucket="bench", Key=f"kb/{n * 487 % objects:05}.md", Body=_object(n, 1)
                )
            gets = server.gets()
            started = time.perf_counter()
            resync = hub.sources.run("docs", "bucket")
            resync_s = time.perf_counter() - started
            resync_gets = server.gets() - gets
            started = time.perf_counter()
            full = hub.sources.run("docs", "bucket", force=True)
            full_s = time.perf_counter() - started
        finally:
            hub.close()
    finally:
        server.stop()
    print(f"s3, {objects} objects on moto's server, 10 changed (hash embedder)")
    print(
        f"  re-sync                     {resync_s:8.2f} s  {resync.bytes:>10,} bytes  "
        f"{resync_gets} GETs"
    )
    print(f"  full re-download (force)    {full_s:8.2f} s  {full.bytes:>10,} bytes")
    print(
        f"  re-sync / full: time {resync_s / full_s:.3f}x, bytes {resync.bytes / full.bytes:.4f}x"
    )


def _object(n: int, edit: int) -> bytes:
    return f"# Note {n}\n\n{article(n, edit, words=80)}\n".encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--skip", choices=["web", "s3"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as tmp:
        root = Path(tmp)
        if args.skip != "web":
            web(root, args.pages)
        if args.skip != "s3":
            s3(root, args.objects)
    print(machine_line())


if __name__ == "__main__":
    main()
