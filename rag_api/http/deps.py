"""Request-scoped access to the hub opened by the app's lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rag_api.errors import NotReady
from rag_api.hub import Hub
from rag_api.llm.pool import GenerationPool


async def get_hub(request: Request) -> Hub:
    """The app's hub; NotReady (503) while the lifespan is still opening it."""
    hub = getattr(request.app.state, "hub", None)
    if hub is None:
        raise NotReady("the hub is starting: store and models are not open yet")
    return hub


HubDep = Annotated[Hub, Depends(get_hub)]  # a route's `hub: HubDep`: the open hub, or 503 NOT_READY


async def get_generation(request: Request) -> GenerationPool:
    """Where routes run LLM work (see rag_api.llm.pool)."""
    return request.app.state.generation
