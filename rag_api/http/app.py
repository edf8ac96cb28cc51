"""create_app(settings): the FastAPI application; its lifespan opens the hub (store + models)."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from rag_api import version
from rag_api.console import views as console
from rag_api.http import oauth
from rag_api.http.endpoints import (
    admin,
    backups,
    collections,
    evaluation,
    health,
    jobs,
    openai,
    ops,
    overview,
    passages,
    query,
    sources,
    uploads,
    watcher,
)
from rag_api.http.error_responses import ERRORS, install_error_handlers
from rag_api.http.forward import ToWriter
from rag_api.http.hot_reads import HotReads
from rag_api.http.json_body import JsonBodies
from rag_api.http.limits import BodyLimit
from rag_api.http.mcp import MAX_BYTES as MCP_MAX_BYTES
from rag_api.http.mcp import PATH as MCP_PATH
from rag_api.http.mcp import McpEndpoint
from rag_api.http.request_log import RequestLog
from rag_api.hub import Hub
from rag_api.kbadmin.writes import drop_temporary
from rag_api.ops.server.listening import announce, withdraw
from rag_api.ops.server.readiness import disk_problem
from rag_api.replicas.role import describe as describe_role
from rag_api.settings import Settings

log = logging.getLogger("rag_api.http.app")


def create_app(
    settings: Settings | None = None, hub: Hub | None = None, watch: bool = False
) -> FastAPI:
    """A fresh app. It opens its own hub at start-up unless one is given (then the caller owns it);
    `watch` runs the folder indexer in the same process (what the embedded store needs)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = hub or await anyio.to_thread.run_sync(Hub.open, settings)
        record = None
        try:
            await anyio.to_thread.run_sync(opened.load_models)
            if settings.writes:  # persist: false ends here (the writer's to do)
                await anyio.to_thread.run_sync(drop_temporary, opened)
            log.info(
                "serving %d collections from %s as %s",
                len(opened.collections),
                opened.store.location,
                describe_role(settings),
            )
            log.log(*opened.keyring.summary(settings.host))
            low = disk_problem(opened)
            if low is not None:
                log.warning("%s", low.message)
            await anyio.to_thread.run_sync(opened.start, watch)
            app.state.hub = opened
            record = announce(settings)  # CLI reads find this server by it
            async with agents.running():  # /mcp: its session manager lives as long as the app
                yield
        finally:
            app.state.hub = None
            withdraw(record)
            # a hub given by the caller stays open: only what this app started stops
            await anyio.to_thread.run_sync(opened.stop if hub is not None else opened.close)

    # /docs and /redoc with Swagger UI and ReDoc from the fastapi-offline package: no CDN
    app = FastAPIOffline(
        title="RAG Hub",
        summary="Retrieval-augmented answers from folders of documents, on Qdrant.",
        description="[← Back to the console](/): collections, questions, uploads, keys.",
        favicon_url=console.FAVICON,
        version=version(),
        lifespan=lifespan,
        responses=ERRORS,
        # the hub's metrics are Prometheus (rag_api.observability.metrics); FastAPI's own OpenTelemetry hooks
        # would look up three providers on every request (~15 us) to find none configured
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.hub = None  # the one thing the app keeps: set once the lifespan has opened it
    install_error_handlers(app)
    app.add_middleware(JsonBodies)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        wider={
            uploads.UPLOAD_PATH: settings.upload_max_bytes,
            re.compile(f"^{MCP_PATH}$"): MCP_MAX_BYTES,
        },
    )
    if settings.role == "reader" and settings.writer_url:  # writes go to the writer, as they came
        app.add_middleware(
            ToWriter, writer_url=settings.writer_url, timeout_s=settings.writer_timeout_s
        )
    app.add_middleware(RequestLog)  # its id and timing cover every layer below
    # outermost: the plain hot reads are answered here, with the checks, id, log and metrics of
    # the layers above in one pass; everything else goes on to them
    app.add_middleware(HotReads, max_bytes=settings.max_body_bytes)
    routers = (
        health.router,
        collections.router,
        query.router,
        openai.router,
        ops.router,
        backups.router,
        watcher.router,
        admin.router,
        uploads.router,
        sources.router,
        passages.router,
        oauth.router,
        jobs.router,
        evaluation.router,
        overview.router,
    )
    for router in routers:
        app.include_router(router)
    agents = McpEndpoint(app)
    app.router.add_route(
        MCP_PATH, agents, methods=["GET", "POST", "DELETE"], include_in_schema=False
    )
    console.install(app)  # the pages at / (data comes from the API above, with the tab's key)
    return app
