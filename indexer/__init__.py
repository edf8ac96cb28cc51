"""The folder indexer: keeps each collection in sync with its kb folder (`rag-hub watch`,
`rag-hub serve --watch`). Depends on rag_api; rag_api imports it only inside the two places that
start a watcher (rag_api.http.app's lifespan with watch=True, the `rag-hub watch` command), so nothing
else loads it.

Settings (environment, like every per-machine setting): RAG_WATCH_DEBOUNCE_S (default 1: a file is
indexed once no event touched it for this long and its size and mtime held still),
RAG_WATCH_RESCAN_S (default 300: period of the full reconcile that catches what events missed;
0 = only at start), RAG_MAX_FILE_BYTES (default 50 MiB: larger files are skipped and logged).
"""

from indexer.watcher import Watcher

__all__ = ["Watcher"]
