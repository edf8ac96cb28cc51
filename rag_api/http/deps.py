"""What routes take from the app: its hub (`app.state.hub`, the one thing the app keeps) and the
services the hub owns, as dependencies (async: FastAPI would run a plain function in a worker
thread)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from rag_api.access.keyring import Keyring
from rag_api.errors import NotReady
from rag_api.hub import Hub
from rag_api.llm.pool import GenerationPool
from rag_api.openai_compat.stored import ResponseStore
from rag_api.settings import Settings
from rag_api.uploads.service import Uploads
from rag_api.watcher import Watcher


async def get_opened(request: Request) -> Hub | None:
    """The app's hub, or None while the lifespan is still opening it."""
    return request.app.state.hub


async def get_hub(request: Request) -> Hub:
    """The app's hub; NotReady (503) while the lifespan is still opening it."""
    hub = request.app.state.hub
    if hub is None:
        raise NotReady("the hub is starting: store and models are not open yet")
    return hub


HubDep = Annotated[Hub, Depends(get_hub)]  # a route's `hub: HubDep`: the open hub, or 503 NOT_READY
OpenedDep = Annotated[Hub | None, Depends(get_opened)]  # for /ready, which says why not


async def get_settings(hub: HubDep) -> Settings:
    return hub.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_keyring(hub: HubDep) -> Keyring:
    return hub.keyring


KeyringDep = Annotated[Keyring, Depends(get_keyring)]


async def get_generation(hub: HubDep) -> GenerationPool:
    """Where routes run LLM work (see rag_api.llm.pool)."""
    return hub.generation


GenerationDep = Annotated[GenerationPool, Depends(get_generation)]


async def get_responses(hub: HubDep) -> ResponseStore:
    """The stored responses of /v1/responses."""
    return hub.responses


ResponsesDep = Annotated[ResponseStore, Depends(get_responses)]


async def get_watcher(hub: HubDep) -> Watcher | None:
    """The folder watcher, when this process runs one (`rag-hub serve --watch`)."""
    return hub.watcher


WatcherDep = Annotated[Watcher | None, Depends(get_watcher)]


def indexer_status(watcher: Watcher | None) -> dict[str, Any]:
    """The watcher's status, or `running: false` when this process does not watch."""
    return watcher.status() if watcher is not None else {"running": False, "collections": {}}


async def get_uploads(hub: HubDep) -> Uploads:
    if hub.uploads is None:
        raise NotReady("the hub is starting: the upload queue is not running yet")
    return hub.uploads


UploadsDep = Annotated[Uploads, Depends(get_uploads)]
