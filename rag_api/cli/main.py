"""The `rag-hub` command: the top-level group (settings, logging) and the commands it assembles,
one module per group in rag_api/cli (check and migrate in rag_api/cli/ops.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from rag_api import version
from rag_api.cli.backup import backup, restore
from rag_api.cli.config_commands import config as config_group
from rag_api.cli.eval import eval_command
from rag_api.cli.index import index
from rag_api.cli.keys import keys
from rag_api.cli.mcp import mcp_command
from rag_api.cli.ops import check, migrate
from rag_api.cli.reads import collections_, query
from rag_api.cli.serve import serve, watch
from rag_api.cli.sync import sync
from rag_api.observability.logs import configure_logging
from rag_api.settings import Settings

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(
    version(), "-V", "--version", prog_name="rag-hub", message="%(prog)s %(version)s"
)
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path),
    envvar="RAG_CONFIG",
    help="collections.yaml [env RAG_CONFIG; default ./collections.yaml]",
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    envvar="RAG_DATA_DIR",
    help="Where the embedded store lives [env RAG_DATA_DIR; default ./data]",
)
@click.option(
    "--key",
    envvar="RAG_KEY",
    help="The bearer key sent to a running server, such as a scoped key [env RAG_KEY; default "
    "RAG_ADMIN_API_KEY for operations, RAG_API_KEY for reads]",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.pass_context
def cli(
    ctx: click.Context, config: Path | None, data_dir: Path | None, key: str | None, verbose: int
) -> None:
    """RAG Hub: knowledge bases from folders of documents, answered from Qdrant."""
    overrides: dict[str, Any] = {}
    if key is not None:
        overrides["key"] = key
    if config is not None:
        overrides["config"] = config
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    ctx.obj = Settings(**overrides)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    configure_logging(level, ctx.obj.log_format)


# one line per command or group; click lists them in --help alphabetically
for command in (
    serve,
    watch,
    index,
    sync,
    query,
    collections_,
    config_group,
    check,
    migrate,
    backup,
    restore,
    eval_command,
    keys,
    mcp_command,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="rag-hub")


if __name__ == "__main__":
    main()
