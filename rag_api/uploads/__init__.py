"""Files in over HTTP: uploads written into a collection's kb folder and indexed in a bounded queue.

The kb folder stays the source of truth: an upload is a file copied into it (atomically, under a
safe name: rag_api.uploads.names, .intake), then indexed by the same `sync_collection` the watcher
runs (.indexing), so the watcher, `rag-hub check` and migrations see nothing new. Jobs are kept in
RAG_DATA_DIR/jobs and outlive a restart (.jobs); the folder's files and their index state come
from comparing the folder with the store (.state). Routes: rag_api.http.routes.files.
"""
