"""`rag-hub sync`: sync a collection's sources (all, or one) now, with a progress bar and a
summary; inside the running server when one serves the store, else in this process."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from rag_api.cli.common import domain_errors
from rag_api.settings import Settings


@click.command()
@click.argument("collection")
@click.argument("source", required=False)
@click.option("--prune", is_flag=True, help="Remove a mass of vanished documents without asking.")
@click.option("--force", is_flag=True, help="Read every document again, changed or not.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.pass_obj
@domain_errors
def sync(
    settings: Settings,
    collection: str,
    source: str | None,
    prune: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Sync COLLECTION's sources (web sites, buckets, repositories), or only SOURCE.

    Only new and changed documents are read and embedded; a document is removed when its source
    says it is gone, or a whole listing lacks it. Exit 1 when a source could not be synced.
    """
    from rag_api.cli.ops import store_owner
    from rag_api.config import load_config
    from rag_api.errors import RagError, SourceNotFound
    from rag_api.ops.interface import SYNC, OnSource, SyncBody

    blocks = load_config(settings.config).collection(collection).sources
    names = [source] if source else [block.name for block in blocks]
    if not names:
        raise SourceNotFound(f"collection '{collection}' has no sources (collections.yaml)")
    reports: list[dict[str, Any]] = []
    failed = 0
    with store_owner(settings, prefer_server=True) as owner:
        for name in names:
            asked = OnSource(
                collection=collection, source=name, body=SyncBody(prune=prune, force=force)
            )
            try:
                reports.append(owner.run(SYNC, asked))
            except RagError as exc:
                click.echo(f"error: {collection}/{name}: {exc.message}", err=True)
                failed += 1
    if as_json:
        click.echo(json.dumps(reports, indent=2))
    else:
        for report in reports:
            _echo(report)
    if failed or any(r["held"] for r in reports):
        sys.exit(1)


def _echo(r: dict[str, Any]) -> None:
    click.echo(
        f"{r['collection']}/{r['source']} ({r['kind']}): {r['listed']} documents "
        f"({r['indexed']} indexed, {r['unchanged']} unchanged, {r['failed']} failed), "
        f"{r['removed']} removed; chunks: {r['chunks_embedded']} embedded, "
        f"{r['chunks_reused']} reused, {r['chunks_deleted']} deleted; "
        f"{r['bytes'] / 1e6:.1f} MB read; {r['seconds']:.1f} s"
    )
    for why in (r["incomplete"], r["held"]):
        if why:
            click.echo(f"  {why}")
    for key, reason in sorted(r["errors"].items()):
        click.echo(f"  failed {key}: {reason}")
    for key, reason in sorted(r["skipped"].items()):
        click.echo(f"  skipped {key}: {reason}")
