"""`rag-hub check` and `rag-hub migrate`: in this process, or inside the server that owns the store."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from rag_api.config import EmbedderConfig
from rag_api.errors import ConfigError, RagError, StoreLocked
from rag_api.ops.check.findings import FAILED, CheckReport, render_text
from rag_api.providers import EMBEDDERS
from rag_api.settings import Settings

if TYPE_CHECKING:  # the store, the models and ruamel load only when a command runs
    from rag_api.ops.interface import Ops
    from rag_api.ops.migrate.run import MigrateBody, MigrationPlan, MigrationResult

log = logging.getLogger("rag_api.ops")


@contextmanager
def store_owner(
    settings: Settings, prefer_server: bool = False, admin: bool = True
) -> Iterator[Ops]:
    """This process on its own hub, or the running server when it owns the embedded store
    (asked with the admin key, or with `admin` False the reader key): the normal case while
    the hub serves, logged at info (`-v`).

    With `prefer_server`, a server of this store that answers is used even when the store is
    not locked: a migration must switch the serving process's model together with the alias.
    """
    from rag_api.cli.ops_client import OpsClient
    from rag_api.hub import Hub
    from rag_api.ops.local import LocalOps

    client = OpsClient(settings, admin=admin)
    if prefer_server and client.serves(settings):
        log.warning("running inside %s", client.where)
        yield client
        return
    try:
        hub = Hub.open(settings)
    except StoreLocked as exc:
        if not client.answers():
            raise StoreLocked(
                f"{exc.message}; and no rag-hub server answers at {client.url} "
                "(set RAG_HOST / RAG_PORT to where it listens)"
            ) from None
        log.info("the store is owned by %s: running the operation there", client.where)
        yield client
        return
    try:
        yield LocalOps(hub)
    finally:
        hub.close()


@click.command()
@click.argument("collection", required=False)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON document on stdout; logs on stderr."
)
@click.option(
    "--repair",
    is_flag=True,
    help="Fix what is safe: re-index files, delete orphans and duplicates.",
)
@click.option(
    "--sample",
    type=click.IntRange(0, 10_000),
    default=16,
    show_default=True,
    help="Stored chunks re-embedded to catch a silently changed model.",
)
@click.option(
    "--verify-backups",
    is_flag=True,
    help="Restore each collection's newest backup into a scratch store and compare it.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the JSON document to this file (replaced atomically).",
)
@click.pass_obj
def check(
    settings: Settings,
    collection: str | None,
    as_json: bool,
    repair: bool,
    sample: int,
    verify_backups: bool,
    output: Path | None,
) -> None:
    """Check collections against collections.yaml and their kb folders.

    Exit status: 0 healthy, 1 problems found, 2 could not run (config, store).
    """
    from rag_api.ops.interface import CHECK, CheckRequest

    asked = CheckRequest(
        collection=collection, repair=repair, sample=sample, verify_backups=verify_backups
    )
    try:
        with store_owner(settings, admin=repair) as owner:  # a plain check only reads
            document = owner.run(CHECK, asked).as_dict()
    except RagError as exc:
        document = CheckReport.failed(exc.code, exc.message).as_dict()
    text = json.dumps(document, ensure_ascii=False)
    if output is not None:
        from rag_api.atomic import write_atomically

        write_atomically(output, text + "\n")
    if as_json:
        click.echo(text)
    else:
        click.echo(render_text(document), err=document["exit_code"] == FAILED)
    sys.exit(document["exit_code"])


@click.command()
@click.argument("collection")
@click.option("--provider", type=click.Choice(EMBEDDERS.names()), help="New embedding provider.")
@click.option("--model", help="New embedding model.")
@click.option("--dim", type=click.IntRange(1, 65536), help="Its vector size.")
@click.option("--query-prefix", help="Prefix of queries for the new model (e5: 'query: ').")
@click.option("--document-prefix", help="Prefix of chunks for the new model.")
@click.option("--base-url", help="Provider URL (openai: an OpenAI-compatible /v1).")
@click.option("--api-key-env", help="Environment variable holding the provider's API key.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Show the plan and the collections.yaml change only.")
@click.option("--rollback", is_flag=True, help="Go back to the collection the last one replaced.")
@click.option("--drop-old", is_flag=True, help="Delete the collections a migration left behind.")
@click.pass_obj
def migrate(
    settings: Settings,
    collection: str,
    yes: bool,
    dry_run: bool,
    rollback: bool,
    drop_old: bool,
    **new: Any,
) -> None:
    """Re-embed COLLECTION with another model next to the live one, then switch with no downtime.

    Writes that arrive meanwhile are carried over; the old collection is kept for --rollback.
    """
    given = {k: v for k, v in new.items() if v}
    if sum([rollback, drop_old, bool(given)]) != 1:
        raise click.UsageError("give --provider, --model and --dim; or --rollback; or --drop-old")
    if drop_old and dry_run:
        raise click.UsageError(
            "--drop-old has no dry run: `rag-hub collections` shows what is live"
        )
    from rag_api.ops.interface import DROP_OLD, CollectionRequest
    from rag_api.ops.migrate.run import MigrateBody

    new_embedder = {"embedder": _embedder(given)} if given else {}
    body = MigrateBody(collection=collection, rollback=rollback, **new_embedder)
    try:
        if drop_old:
            with store_owner(settings, prefer_server=True) as owner:
                dropped = owner.run(DROP_OLD, CollectionRequest(collection=collection)).dropped
            click.echo(f"{collection}: dropped {', '.join(dropped) or 'nothing'}")
        else:
            _migrate(settings, body, yes, dry_run)
    except RagError as exc:
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(1)


def _migrate(settings: Settings, body: MigrateBody, yes: bool, dry_run: bool) -> None:
    from rag_api.ops.config import file as config_file
    from rag_api.ops.interface import MIGRATE, PLAN

    problem = None if dry_run else config_file.writable_or_why(settings.config)
    if problem:
        raise ConfigError(f"cannot update collections.yaml: {problem} (--dry-run shows the change)")
    name = body.collection
    with store_owner(settings, prefer_server=True) as owner:
        plan = owner.run(PLAN, body)
        click.echo(describe_plan(plan))
        # before anything moves: the file must be able to take the new embedder
        old, new = config_file.with_embedder(settings.config, name, plan.embedder)
        if dry_run:
            click.echo(
                config_file.diff(settings.config, old, new) or f"{settings.config}: no change"
            )
            return
        _confirm(yes)
        result = owner.run(MIGRATE, body)
    changed = config_file.set_embedder(settings.config, name, plan.embedder)
    click.echo(describe_result(result, settings.config, changed))


def describe_plan(plan: MigrationPlan) -> str:
    """The plan as the operator reads it before confirming."""
    new = plan.embedder
    head = f"{plan.collection}: {plan.old_embedder} ({plan.old_dim}d) -> {new.id} ({new.dim}d)"
    if plan.noop:
        return f"{head}\n  {plan.noop}"
    lines = [head, f"  {plan.points} chunks in {plan.live}, re-embedded into {plan.target}"]
    if plan.rollback:
        lines.append(f"  rollback: {plan.target} is live again; only what changed is re-embedded")
    elif plan.discard:
        lines.append(f"  {plan.discard}: it is dropped and rebuilt")
    elif plan.migrated:
        lines.append(f"  resuming: {plan.target} already holds {plan.migrated} points")
    return "\n".join(lines)


def describe_result(result: MigrationResult, config: Path, changed: bool) -> str:
    """What the migration did, and what to run next."""
    name = result.collection
    lines = [f"{name}: {note}" for note in result.notes]
    if result.previous:
        lines.append(
            f"{name}: {result.previous} -> {result.live}: {result.points} chunks, "
            f"{result.embedded} embedded, {result.unchanged} already there, "
            f"{result.passes} passes, top-5 overlap {result.top5_overlap}, "
            f"{result.seconds:.1f} s"
        )
        lines.append(
            f"{result.previous} is kept: `rag-hub migrate {name} --rollback` goes back, "
            f"`rag-hub migrate {name} --drop-old` deletes it"
        )
    lines.append(f"{config}: {'embedder updated' if changed else 'unchanged'}")
    return "\n".join(lines)


def _embedder(given: dict[str, Any]) -> EmbedderConfig:
    missing = [f"--{k.replace('_', '-')}" for k in ("provider", "model", "dim") if k not in given]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)}")
    try:
        return EmbedderConfig.model_validate(given)
    except ValidationError as exc:
        raise click.UsageError(exc.errors()[0]["msg"]) from None


def _confirm(yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError("no terminal to confirm on: pass --yes to migrate without asking")
    click.confirm("Migrate?", abort=True)
