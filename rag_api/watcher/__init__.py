"""The folder indexer: keeps each collection in sync with its kb folder (`rag-hub watch`, `rag-hub
serve --watch`; docs/indexing.md). May import hub and below; rag_api's http and cli start it."""

from rag_api.watcher.watcher import Watcher

__all__ = ["Watcher"]
