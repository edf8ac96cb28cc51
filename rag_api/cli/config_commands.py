"""`rag-hub config`: commands on collections.yaml itself (no store)."""

from __future__ import annotations

import sys

import click

from rag_api.cli.common import domain_errors
from rag_api.settings import Settings


@click.group()
def config() -> None:
    """collections.yaml commands."""


@config.command("check")
@click.option("--online", is_flag=True, help="Also ask Ollama / OpenAI embedders for their size.")
@click.pass_obj
@domain_errors
def config_check(settings: Settings, online: bool) -> None:
    """Validate collections.yaml: keys, kb folders, model names and sizes (no store).

    Exit status 1 when a kb folder is missing, a local model is unknown or a dim is impossible.
    """
    from rag_api.config import load_config
    from rag_api.ops.config.review import review

    reviews = review(settings, load_config(settings.config), online)
    problems = 0
    for item in reviews:
        click.echo(item.line)
        for note in item.notes:
            click.echo(f"  note: {note}")
        for problem in item.problems:
            click.echo(f"  error: {item.name}: {problem}")
        problems += len(item.problems)
    if problems:
        click.echo(f"{settings.config}: {problems} problem(s) in {len(reviews)} collections")
        sys.exit(1)
    click.echo(f"{settings.config}: valid, {len(reviews)} collections")
