"""`rag-hub backup` and `rag-hub restore`: in this process, or inside the server that owns the store
(with the admin key), like `check --repair` and `migrate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rag_api.cli.common import domain_errors
from rag_api.cli.ops import store_owner
from rag_api.settings import Settings

if TYPE_CHECKING:
    from rag_api.ops.backup.restore import Restored

MB = 1024 * 1024


@click.command()
@click.argument("collections", nargs=-1)
@click.option(
    "--to",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the backup under this folder [default: RAG_BACKUP_DIR, pruned by retention].",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.pass_obj
@domain_errors
def backup(
    settings: Settings, collections: tuple[str, ...], to: Path | None, as_json: bool
) -> None:
    """Back up COLLECTIONS (default: all) into one folder: a file per collection + a manifest.

    Consistent while the server runs: each collection is read in one state, its writes held
    for the read only (reads go on).
    """
    from rag_api.ops.interface import BACKUP, BackupRequest

    # the server may run elsewhere in the filesystem: an absolute folder
    asked = BackupRequest(
        collections=list(collections) or None, to=None if to is None else str(to.resolve())
    )
    with store_owner(settings) as owner:
        result = owner.run(BACKUP, asked)
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
        return
    for name, entry in result.collections.items():
        held = result.held_s.get(name, 0.0)
        click.echo(
            f"{name}: {entry['points']} points, {entry['bytes'] / MB:.1f} MB "
            f"(writes held {held:.2f} s)"
        )
    click.echo(f"backup: {result.path} ({result.seconds:.1f} s)")
    if result.pruned:
        click.echo(f"retention removed: {', '.join(result.pruned)}")


@click.command()
@click.argument("backup", type=click.Path(path_type=Path))
@click.option("--collection", "collections", multiple=True, help="Only this collection (repeat).")
@click.option("--as", "as_name", help="Restore the one collection under this name, beside it.")
@click.option(
    "--with-config",
    is_flag=True,
    help="Adopt the backup's embedder when collections.yaml names another (and write it there).",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.pass_obj
@domain_errors
def restore(
    settings: Settings,
    backup: Path,
    collections: tuple[str, ...],
    as_name: str | None,
    with_config: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Verify BACKUP (a folder `rag-hub backup` wrote), restore it beside the live collection and
    swap the alias; a corrupt or truncated backup is refused before anything changes.

    The collection it replaces is kept (`rag-hub migrate NAME --drop-old` deletes it).
    """
    from rag_api.ops.backup import file_format as backup_format

    manifest = backup_format.read_manifest(backup)  # a wrong folder: said before asking
    names = list(collections) or sorted(manifest["collections"])
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("no terminal to confirm on: pass --yes to restore")
        target = f" as '{as_name}'" if as_name else ""
        click.confirm(
            f"Restore {', '.join(names)}{target} from {manifest['taken_at']}?", abort=True
        )
    from rag_api.ops.interface import RESTORE, RestoreRequest

    asked = RestoreRequest(
        backup=str(backup.resolve()),
        collections=list(collections) or None,
        as_name=as_name,
        with_config=with_config,
    )
    with store_owner(settings, prefer_server=True) as owner:
        result = owner.run(RESTORE, asked)
    adopted = [r for r in result.restored if r.config_adopted]
    if adopted:
        _write_embedders(settings, backup, manifest, adopted)
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
        return
    for r in result.restored:
        click.echo(
            f"{r.collection}: {r.points} points restored into {r.live}"
            + (f" ({r.previous} is kept)" if r.previous else "")
        )
    for note in result.notes:
        click.echo(f"note: {note}")


def _write_embedders(
    settings: Settings, backup: Path, manifest: dict[str, Any], adopted: list[Restored]
) -> None:
    """collections.yaml takes the embedder of each collection restored with --with-config."""
    from rag_api.config import CollectionConfig
    from rag_api.ops.backup import file_format as backup_format
    from rag_api.ops.config import file as config_file

    for r in adopted:
        entry = manifest["collections"][r.source]
        header = backup_format.read_header(backup, r.source, entry)
        embedder = CollectionConfig.model_validate(header.config).embedder
        config_file.set_embedder(settings.config, r.collection, embedder)
        click.echo(f"{settings.config}: embedder of '{r.collection}' set to {embedder.id}")
