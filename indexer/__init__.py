"""The folder indexer: keeps each collection in sync with its kb folder (`rag-hub watch`, `rag-hub
serve --watch`; docs/indexing.md). May import hub and below; rag_api's http and cli start it."""

from indexer.watcher import Watcher

__all__ = ["Watcher"]
