"""The `rag-hub` command: serve, watch, index, query, collections, config check."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rag_api.errors import RagError
from rag_api.log_format import configure_logging
from rag_api.ops.cli import check, migrate, store_owner
from rag_api.settings import Settings

if TYPE_CHECKING:  # the store and the models load only when a command runs
    from rag_api.hub import Hub
    from rag_api.sync import SyncReport

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def domain_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A RagError ends the command with one line on stderr and exit status 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RagError as exc:
            click.echo(f"error: {exc.message}", err=True)
            sys.exit(1)

    return wrapper


@click.group(context_settings=CONTEXT)
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
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.pass_context
def cli(ctx: click.Context, config: Path | None, data_dir: Path | None, verbose: int) -> None:
    """RAG Hub: knowledge bases from folders of documents, answered from Qdrant."""
    overrides: dict[str, Any] = {}
    if config is not None:
        overrides["config"] = config
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    ctx.obj = Settings(**overrides)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    configure_logging(level, ctx.obj.log_format)


@contextmanager
def open_hub(settings: Settings) -> Iterator[Any]:
    from rag_api.errors import StoreLocked
    from rag_api.hub import Hub
    from rag_api.ops.listening import recorded_url

    try:
        hub = Hub.open(settings)
    except StoreLocked as exc:
        url = recorded_url(settings)
        if url is None:
            raise
        owner = exc.message.partition(" (")[0]  # "the embedded store ... is in use by pid N"
        raise StoreLocked(
            f"{owner}, the rag-hub server at {url}; this command writes to the store: stop the "
            f"server, or make the change through its HTTP admin API ({url}/v1/rag/*, e.g. "
            "POST /v1/rag/reload syncs a collection with its kb folder)"
        ) from None
    try:
        yield hub
    finally:
        hub.close()


@cli.command()
@click.option("--host", envvar="RAG_HOST", help="Bind address [env RAG_HOST; default 127.0.0.1]")
@click.option("--port", type=int, envvar="RAG_PORT", help="Port [env RAG_PORT; default 8000]")
@click.option(
    "--watch", is_flag=True, help="Also keep the collections in sync with their kb folders."
)
@click.pass_obj
@domain_errors
def serve(settings: Settings, host: str | None, port: int | None, watch: bool) -> None:
    """Serve the HTTP API (with --watch: and the folder indexer, in this one process)."""
    import uvicorn

    from rag_api.app import create_app

    if host:
        settings.host = host
    if port:
        settings.port = port
    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    app = create_app(settings, watch=watch)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's loggers write through ours (RAG_LOG_FORMAT)
        access_log=False,  # the hub logs each request itself (rag_api.access), with its id
    )


@cli.command()
@click.option("--debounce", type=click.FloatRange(0), help="Seconds a file must be quiet.")
@click.option("--rescan", type=click.FloatRange(0), help="Seconds between full reconciles.")
@click.pass_obj
@domain_errors
def watch(settings: Settings, debounce: float | None, rescan: float | None) -> None:
    """Keep every enabled collection in sync with its kb folder (the indexer alone).

    With the embedded store this process owns it and no API can run beside it: use
    `serve --watch` instead. Defaults: RAG_WATCH_DEBOUNCE_S, RAG_WATCH_RESCAN_S.
    """
    import signal
    import threading

    from indexer import Watcher

    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_hub(settings) as hub:
        hub.load_models()
        watcher = Watcher(hub, debounce_s=debounce, rescan_s=rescan).start()
        try:
            stop.wait()
        finally:
            watcher.stop()


@cli.command()
@click.argument("collection", required=False)
@click.option("--force", is_flag=True, help="Re-embed every file, changed or not.")
@click.option(
    "--prune",
    is_flag=True,
    help="Remove the chunks of a mass of vanished files without asking (see README).",
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

    from rag_api import kb
    from rag_api.sync import SyncReport, sync_collection

    kb_coll = hub.collection(name)
    if kb_coll.kb_path is None:
        return SyncReport(name)
    hub.embeddings.check_dimension(kb_coll.cfg.embedder, name)
    max_bytes = hub.settings.max_file_bytes
    total = len(kb.scan(kb_coll.kb_path, max_bytes)[0])
    with tqdm(
        total=total, desc=name, unit="file", disable=quiet or not total, file=sys.stderr
    ) as bar:
        report = sync_collection(
            kb_coll, force=force, progress=bar.update, max_bytes=max_bytes, prune=prune
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


@cli.command()
@click.argument("collection")
@click.argument("question")
@click.option("--top-k", type=click.IntRange(1, 100))
@click.option("--threshold", type=click.FloatRange(-1, 1))
@click.option("--mode", type=click.Choice(["dense", "sparse", "hybrid"]))
@click.option("--source", "sources", multiple=True, help="Only these sources (repeatable).")
@click.option("--source-prefix", help="Only sources starting with this.")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata equality (repeatable).",
)
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Rerank with the collection's cross-encoder (default: its rerank block decides).",
)
@click.option("--diversity", type=click.FloatRange(0, 1), help="MMR: 0 = off, 1 = most diverse.")
@click.option("--no-generate", is_flag=True, help="Only retrieve; no answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the full response as JSON.")
@click.pass_obj
@domain_errors
def query(
    settings: Settings,
    collection: str,
    question: str,
    top_k: int | None,
    threshold: float | None,
    mode: str | None,
    sources: tuple[str, ...],
    source_prefix: str | None,
    filters: tuple[str, ...],
    rerank: bool | None,
    diversity: float | None,
    no_generate: bool,
    as_json: bool,
) -> None:
    """Ask COLLECTION a QUESTION."""
    from pydantic import ValidationError

    from rag_api.query import QueryBody

    metadata = {}
    for item in filters:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--filter")
        metadata[key] = _scalar(value)
    try:
        body = QueryBody(
            query=question,
            top_k=top_k,
            threshold=threshold,
            mode=mode,
            sources=list(sources) or None,
            filters={"metadata": metadata, "source_prefix": source_prefix},
            rerank=rerank,
            diversity=diversity,
            generate=not no_generate,
        )
    except ValidationError as exc:
        raise click.BadParameter(exc.errors()[0]["msg"]) from None
    # the response carries the LLM's warning: printed below, not logged as well
    logging.getLogger("rag_api.answer").setLevel(logging.ERROR)
    # through the server when it owns the store, with the reader key
    with store_owner(settings, admin=False, quiet=True) as owner:
        response = owner.query(collection, body)
    if as_json:
        click.echo(json.dumps(response, indent=2, ensure_ascii=False))
        return
    if response["answer"] is not None:
        click.echo(response["answer"])
        click.echo()
    if response.get("warning"):
        click.echo(f"warning: {response['warning']}", err=True)
    click.echo(f"mode: {response['mode']}")
    for n, source in enumerate(response["sources"], 1):
        click.echo(f"[{n}] {source['source']}#{source['chunk_index']}  {_why(source)}")


@cli.command("collections")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@domain_errors
def collections_(settings: Settings, as_json: bool) -> None:
    """List the configured collections and what the store holds."""
    # through the server when it owns the store, with the reader key
    with store_owner(settings, admin=False, quiet=True) as owner:
        rows = owner.collections()
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for row in rows:
        state = "" if row["enabled"] else " (disabled)"
        state += f" ({row['error']['message']})" if "error" in row else ""
        click.echo(
            f"{row['name']}{state}: {row['points']} chunks, {row['embedder']} ({row['dim']}d), "
            f"{row['language']}, mode {row['mode']}, llm {row['llm']}, kb {row['kb']}"
        )


@cli.group()
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
    from rag_api.ops.config_review import review

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


def _why(source: dict) -> str:
    """Why a passage was returned: its fused score and each side's score and rank."""
    parts = [f"score={source['score']:.4f}"]
    for side in ("dense", "sparse"):
        if source[f"{side}_score"] is not None:
            rank = source[f"{side}_rank"]
            parts.append(f"{side}={source[f'{side}_score']:.4f} (#{rank or '-'})")
    if source["rerank_score"] is not None:
        parts.append(f"rerank={source['rerank_score']:.4f}")
    return "  ".join(parts)


def _scalar(value: str) -> str | int | float | bool:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


cli.add_command(check)
cli.add_command(migrate)


def main() -> None:
    cli(prog_name="rag-hub")


if __name__ == "__main__":
    main()
