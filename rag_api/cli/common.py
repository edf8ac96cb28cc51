"""What the commands share: a domain error as one line and exit 1, and the hub a writing command
opens (or the reason it cannot while a server owns the store)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

import click

from rag_api.errors import RagError
from rag_api.settings import Settings


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


@contextmanager
def open_hub(settings: Settings) -> Iterator[Any]:
    """The hub on the store, for a command that writes; a server owning it is named, with the
    admin API to use instead."""
    from rag_api.errors import StoreLocked
    from rag_api.hub import Hub
    from rag_api.ops.server.listening import recorded_url

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
