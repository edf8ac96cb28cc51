"""Running the hub: `serve` (the HTTP API, with --watch the folder indexer too) and `watch` (the
indexer alone)."""

from __future__ import annotations

import click

from rag_api.cli.common import domain_errors, open_hub
from rag_api.observability.logs import apply_log_level
from rag_api.settings import Settings


@click.command()
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

    from rag_api.http.app import create_app

    if host:
        settings.host = host
    if port:
        settings.port = port
    apply_log_level(settings.log_level)
    app = create_app(settings, watch=watch)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's loggers write through ours (RAG_LOG_FORMAT)
        access_log=False,  # the hub logs each request itself (rag_api.access), with its id
    )


@click.command()
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

    from rag_api.watcher import Watcher

    apply_log_level(settings.log_level)
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
