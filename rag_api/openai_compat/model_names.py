"""OpenAI models are collections: `model` names one (or `rag/<name>`); the router's name
(`auto`) routes by the question (rag_api.routing); anything else (say `gpt-4o`, AnythingLLM's
default) goes to default_collection, to `auto` with `unknown_model: auto`, or is a 404 with
`unknown_model: error`. `<collection>:llm` is the collection's LLM without retrieval, for requests
that are not questions to the knowledge base (Open WebUI's "Task Model")."""

from __future__ import annotations

from typing import Any

from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.routing import Target, resolve

PREFIX = "rag/"
DIRECT = ":llm"  # `<collection>:llm`: the collection's LLM, no retrieval


class ModelNotFound(RagError):
    code = "MODEL_NOT_FOUND"
    status = 404


def target(hub: Catalog, model: str) -> Target:
    """Where requests for `model` go: its collection, `auto` (its name, or an unknown name with
    `unknown_model: auto`), default_collection for an unknown name, or ModelNotFound."""
    name = model.removeprefix(PREFIX)
    explicit = model.startswith(PREFIX)
    if name in hub.visible() or name == hub.config.router.name:
        return resolve(hub, name)
    if not explicit and hub.config.unknown_model == "auto":
        return resolve(hub, hub.config.router.name)
    if explicit or hub.config.unknown_model == "error":
        names = ", ".join(models(hub)) or "none"
        why = "" if explicit else " (unknown_model: error in collections.yaml)"
        raise ModelNotFound(
            f"The model '{model}' does not exist{why}: the models are the collections {names}, "
            f"also reachable as {PREFIX}<name>",
            param="model",
        )
    return resolve(hub, None)


def find_model(hub: Catalog, model: str) -> str:
    """The enabled collection named `model` (or `rag/<name>`); a lookup never falls back."""
    name = model.removeprefix(PREFIX)
    if name not in models(hub):
        raise ModelNotFound(f"The model '{model}' does not exist", param="model")
    return name


def direct_collection(hub: Catalog, model: str) -> str | None:
    """The collection of `<collection>:llm` (or `rag/<collection>:llm`), if `model` is one."""
    name = model.removeprefix(PREFIX)
    base = name.removesuffix(DIRECT)
    return base if base != name and base in hub.visible() else None


def models(hub: Catalog) -> list[str]:
    """The enabled collections, one model each, then `auto` when it has two to choose from, then
    `<collection>:llm` for each collection answered by an LLM."""
    names = [name for name in hub.visible() if hub.collections[name].cfg.enabled]
    routable = [name for name in names if hub.collections[name].cfg.routing.enabled]
    auto = [hub.config.router.name] if len(routable) >= 2 else []
    llms = [n + DIRECT for n in names if hub.collections[n].cfg.llm.provider != "extractive"]
    return names + auto + llms


def model_card(hub: Catalog, name: str) -> dict[str, Any]:
    """A collection as an OpenAI model object."""
    path = hub.config.path
    created = int(path.stat().st_mtime) if path is not None and path.exists() else 0
    return {"id": name, "object": "model", "created": created, "owned_by": "rag-hub"}
