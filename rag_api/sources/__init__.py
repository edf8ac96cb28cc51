"""Sources: where a collection's documents come from besides its kb folder (web sites,
S3-compatible buckets, Git repositories, a plugin's kind), synced into it by the folder's rules:
only what changed is read and embedded, nothing is removed without evidence (docs/sources.md).
A source's documents are named `name:key`; its sync runs as a job of the writer's. May import
the layers up to the catalog."""

from rag_api.sources.base import (
    Document,
    Failed,
    Gone,
    Incomplete,
    Item,
    Known,
    Skipped,
    Source,
    SourceContext,
    Unchanged,
)

__all__ = [
    "Document",
    "Failed",
    "Gone",
    "Incomplete",
    "Item",
    "Known",
    "Skipped",
    "Source",
    "SourceContext",
    "Unchanged",
]
