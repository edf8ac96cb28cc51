"""`rag-hub index`: sync collections with their kb folders, with a progress bar and a summary."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from rag_api.cli.common import domain_errors, open_hub
from rag_api.settings import Settings

if TYPE_CHECKING:  # the store and the models load only when the command runs
    from rag_api.hub import Hub
    from rag_api.indexing.sync import SyncReport


@click.command()
@click.argument("collection", required=False)
@click.option("--force", is_flag=True, help="Re-embed every file, changed or not.")
@click.option(
    "--prune",
    is_flag=True,
    help="Remove the chunks of a mass of vanished files without asking (see docs/indexing.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.pass_obj
@domain_errors
def index(
    settings: Settings, collection: str | None, force: bool, prune: bool, as_json: bool
) -> None:
    """Sync collections with their kb folders: embed new and changed files, drop deleted ones.

    A collection whose kb folder is missing is refused (exit 1) and the others go on.
    """
    from rag_api.errors import KbFolderMissing, MassRemoval

    with open_hub(settings) as hub:
        names = (
            [hub.collection(collection).name]
            if collection
            else [n for n, c in hub.collections.items() if c.cfg.enabled]
        )
        api_fed = {n for n in names if hub.collections[n].kb_path is None}
        reports: list[SyncReport] = []
        refused = 0
        for name in names:
            try:
                try:
                    reports.append(_index_one(hub, name, force, prune, as_json))
                except MassRemoval as exc:
                    if prune or not _asked(f"{name}: {exc.message}. Remove them now?"):
                        raise
                    reports.append(_index_one(hub, name, force, True, as_json))
            except (KbFolderMissing, MassRemoval) as exc:
                click.echo(f"error: {name}: {exc.message}", err=True)
                refused += 1
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        for r in reports:
            _echo_report(r, r.collection in api_fed)
    if refused:
        sys.exit(1)


def _index_one(hub: Hub, name: str, force: bool, prune: bool, quiet: bool) -> SyncReport:
    """Sync one collection with a progress bar; its report."""
    from tqdm import tqdm

    from rag_api.indexing import kb
    from rag_api.indexing.sync import SyncReport, sync_collection
    from rag_api.indexing.throughput import Throughput

    kb_coll = hub.collection(name)
    if kb_coll.kb_path is None:
        return SyncReport(name)
    hub.embedders.check_dimension(kb_coll.cfg.embedder, name)
    max_bytes = hub.settings.max_file_bytes
    total = len(kb.scan(kb_coll.kb_path, max_bytes)[0])
    with tqdm(
        total=total, desc=name, unit="file", disable=quiet or not total, file=sys.stderr
    ) as bar:
        throughput = Throughput()

        def files_done(count: int) -> None:
            # an OCR page's note belongs to its file: the rate and the server's take its place
            bar.set_postfix_str(throughput.line(), refresh=False)
            bar.update(count)

        def ocr_page(rel: str, page: int, pages: int) -> None:
            bar.set_postfix_str(f"OCR page {page}/{pages} of {rel}")

        report = sync_collection(
            kb_coll,
            force=force,
            progress=files_done,
            max_bytes=max_bytes,
            prune=prune,
            on_ocr_page=ocr_page,
            throughput=throughput,
        )
    if report.indexed:
        kb_coll.optimize()
    return report


def _echo_report(r: SyncReport, api_fed: bool) -> None:
    if api_fed:
        click.echo(f"{r.collection}: fed through the admin API (no kb folder): nothing to sync")
        return
    click.echo(
        f"{r.collection}: {r.files} files ({r.indexed} indexed, {r.unchanged} unchanged, "
        f"{r.removed} removed); chunks: {r.stats.embedded} embedded, {r.stats.reused} reused, "
        f"{r.stats.deleted} deleted; {r.seconds:.1f} s"
    )
    for rel, reason in sorted(r.errors.items()):
        click.echo(f"  skipped {rel}: {reason}")
    for rel, warnings in sorted(r.warnings.items()):
        for warning in warnings:
            click.echo(f"  {rel}: {warning}")


def _asked(question: str) -> bool:
    """The operator's answer on a terminal; False when there is none to ask on."""
    return sys.stdin.isatty() and click.confirm(question, default=False, err=True)
