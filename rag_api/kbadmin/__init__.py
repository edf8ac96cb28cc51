"""The voice pipeline's knowledge-base admin API (/v1/rag/*): the logic behind routes/admin.py.

The contract (paths, fields, error codes) is the voice pipeline's: §13 of its RAG guide, a
document kept with the pipeline, not in this repo; README's "Voice-pipeline admin API" lists the
endpoints and routes/admin.py and kbadmin/schemas.py hold the fields. On top, every endpoint routes
to a collection (`collection` in the body or the query; default_collection when omitted). Design
decisions where the guide's in-memory index and Qdrant differ:

- `index` is the chunk's `seq` (rag_api.points.sequence): a collection-wide number stored in the
  payload, assigned when the chunk is first written and kept while it lives (an in-place
  overwrite, an edit, a move to another source). It never shifts when another chunk goes, and it
  survives restarts. A replaced document's chunks get new numbers: an old `index` then answers
  404 CHUNK_NOT_FOUND instead of silently naming another chunk.
- API chunks are numbered `chunk_index = 1_000_000 + index` (the guide's example: index 9,
  chunk_index 1000009), so two /add calls on one source never collide and never take a kb
  file's positions. Omitted sources become `dynamic#<index>`.
- Payload of API chunks: origin "api", persist, dynamic, metadata. `is_dynamic` / `has_dynamic`
  report the `dynamic` flag (false for kb-file chunks).
- Persistence: Qdrant is the durable store, so there is no kb/_dynamic.jsonl. `persist: true`
  chunks survive restarts and /reload; `persist: false` ones are deleted when the app starts
  (lifespan) and on /reload.
- /upsert/document replaces the API chunks of its source in one commit (new chunks upserted, old
  ones deleted under the collection's write lock, which searches take shared), so a search sees
  the old document or the new one, never neither or both; an embedder failure raises before
  anything is written (503, old version intact). A crash between the two leaves both stored:
  the next open keeps the newest (rag_api.points.generations). kb-file chunks are the folder's: /upsert
  leaves them alone, /remove deletes them until their file is reconciled again, /chunks/update
  edits them and marks their file for re-indexing so /reload restores the file's text.
- Scores shown (/search, /context, listings with a query) are cosine similarities, the scale of
  the pipeline's thresholds; the order of /search and /context is the retrieval's (hybrid RRF by
  default), filtered by the cosine threshold exactly as the injection does.
- Limits answer 413 PAYLOAD_TOO_LARGE: DOCUMENT_MAX_CHARS per document, CHUNK_MAX_CHARS per
  chunk, ITEMS_MAX per /add/chunks, and the app's body limit. Source names are at most 512
  characters without control characters; they are payload values, never file paths.
- Errors use the hub's one shape, {"error": {"code", "message"}}, with the guide's codes
  (404 CHUNK_NOT_FOUND, 409 AMBIGUOUS_SOURCE, 503 RAG_NOT_ENABLED for `enabled: false`), plus
  409 CHUNK_EXISTS when `new_source` would overwrite another chunk's (source, chunk_index).
- The atomicity above is the write lock of one process: the embedded store has exactly one; on a
  Qdrant server, send a collection's admin writes to one API process.
"""
