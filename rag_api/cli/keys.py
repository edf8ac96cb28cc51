"""`rag-hub keys`: scoped keys in the keys file (RAG_KEYS_FILE), or with RAG_ROLE writer or reader
in the deployment's Qdrant (docs/scaling.md); a running server picks up each change within a
second, without a restart."""

from __future__ import annotations

import json

import click

from rag_api.access.keyring import read_usage
from rag_api.access.keys import parse_duration, scope
from rag_api.cli.common import domain_errors
from rag_api.replicas.role import keys_file
from rag_api.settings import Settings


@click.group()
def keys() -> None:
    """Scoped API keys: per collection, read and/or write, and operations."""


@keys.command("create")
@click.argument("name")
@click.option("--read", "read", help="Collections it may read: a,b or * (every one).")
@click.option("--write", "write", help="Collections it may change (and read): a,b or *.")
@click.option("--admin", is_flag=True, help="Operations: migrate, check --repair, indexer status.")
@click.option(
    "--metrics",
    is_flag=True,
    help="May scrape /metrics (collections it cannot read are left out).",
)
@click.option("--expires", help="Lifetime, such as 90d, 12h or 30m (default: none).")
@click.pass_obj
@domain_errors
def create(
    settings: Settings,
    name: str,
    read: str | None,
    write: str | None,
    admin: bool,
    metrics: bool,
    expires: str | None,
) -> None:
    """Create a key and print its secret, once: only a hash of it is kept."""
    lifetime = parse_duration(expires) if expires else None
    key, secret = keys_file(settings).create(
        name, scope(read), scope(write), admin, lifetime, metrics
    )
    click.echo(f"created key {key.id} ({name}); its secret, shown only now:")
    click.echo(secret)


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@click.pass_obj
@domain_errors
def list_keys(settings: Settings, as_json: bool) -> None:
    """The keys, their scopes and last use (never a secret)."""
    used = read_usage(settings.keys_path.with_name(settings.keys_path.name + ".usage"))
    found = keys_file(settings)
    rows = [key.shown(used.get(key.id)) for key in found.load()]
    if as_json:
        click.echo(json.dumps({"keys": rows}, indent=2))
        return
    for row in rows:
        state = (
            f"revoked {row['revoked']}"
            if row["revoked"]
            else f"expires {row['expires'] or 'never'}"
        )
        scopes = f"read={','.join(row['read']) or '-'} write={','.join(row['write']) or '-'}"
        click.echo(
            f"{row['id']}  {row['name']}  {scopes}{' admin' if row['admin'] else ''}"
            f"{' metrics' if row['metrics'] else ''}  "
            f"{state}  last used {row['last_used'] or 'never'}"
        )
    if not rows:
        click.echo(f"no scoped keys in {found}")


@keys.command("revoke")
@click.argument("key_id")
@click.pass_obj
@domain_errors
def revoke(settings: Settings, key_id: str) -> None:
    """Stop a key at once (a running server too)."""
    key = keys_file(settings).revoke(key_id)
    click.echo(f"revoked key {key.id} ({key.name})")


@keys.command("rotate")
@click.argument("key_id")
@click.option(
    "--grace", default="24h", show_default=True, help="How long the old secret still works."
)
@click.pass_obj
@domain_errors
def rotate(settings: Settings, key_id: str, grace: str) -> None:
    """A new secret for the key; the old one keeps working for the grace period."""
    key, secret = keys_file(settings).rotate(key_id, parse_duration(grace))
    click.echo(
        f"rotated key {key.id} ({key.name}); the old secret works until {key.previous_until}"
    )
    click.echo(secret)
