"""Request-scoped access to the hub opened by the app's lifespan."""

from __future__ import annotations

from fastapi import Request

from rag_api.errors import NotReady
from rag_api.generation_pool import GenerationPool
from rag_api.hub import Hub


async def get_hub(request: Request) -> Hub:
    hub = getattr(request.app.state, "hub", None)
    if hub is None:
        raise NotReady("the hub is starting: store and models are not open yet")
    return hub


async def get_generation(request: Request) -> GenerationPool:
    """Where routes run LLM work (see rag_api.generation_pool)."""
    return request.app.state.generation
