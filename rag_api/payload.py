"""The chunk payload: its field names, the one way the hub builds it, and how any payload is read.

Every chunk the hub writes (from a kb file, the admin API, a chunk edit) gets its payload from
`build`, which holds its metadata to the rules of rag_api.metadata before anything is embedded;
a migration's copy goes through `migrated`. Reading goes through `StoredChunk`, which also
understands payloads written by other tools (LlamaIndex, LangChain) and never raises on a damaged
one. Besides the metadata rules this module imports nothing of the hub: the store's filters and
indexes use its names too.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_api.metadata import require_metadata

# --- field names -------------------------------------------------------------------------------
TEXT = "text"
SOURCE = "source"  # the document a chunk belongs to (a kb path, a name given through the API, or
# a configured source's document: `name:key`, e.g. `help:https://help.example.com/refunds`)
CHUNK_INDEX = "chunk_index"  # its position in the document
SEQ = (
    "seq"  # the collection-wide chunk number, stable for the chunk's life (rag_api.points.sequence)
)
GEN = "gen"  # the generation of the document the chunk belongs to (rag_api.points.generations)
METADATA = "metadata"  # the user's fields (front matter, .jsonl extras, the API's `metadata`)
CONTENT_HASH = "content_hash"  # identity of what was embedded: equal hash, equal vector
EMBEDDER = "embedder"  # the model that made the vector, as provider:model
INDEXED_AT = "indexed_at"
ORIGIN = "origin"  # FROM_FILE, FROM_API or FROM_SOURCE
FILE = "file"  # kb-file chunks: the file's kb-relative path
# kb-file and source chunks: the content hash of the whole document when it was indexed
DOC_HASH = "doc_hash"
# kb-file and source chunks: how many chunks the document was written with; chunks removed or
# moved away through the API then make it incomplete, and the next sync rewrites it
FILE_CHUNKS = "file_chunks"
URL = "url"  # source chunks: where a person reads the original (a page, a file's web view)
# source chunks: what the source said of the document's version when it was read (an ETag,
# Last-Modified, a sitemap's lastmod, an object's ETag and size, a Git blob), as strings
VERSION = "version"
PERSIST = "persist"  # API chunks: false = deleted at the next start or /reload
DYNAMIC = "dynamic"  # API chunks: the pipeline's `dynamic` flag
TITLE = "title"  # the document's title (rag_api.indexing.ingest.document_titles), BM25-indexed with each chunk
# the chunk's labels (rag_api.indexing.labels): what it is, how good it is, and why not better
TYPE = "type"  # one of CHUNK_TYPES
QUALITY = "quality"  # 0..1
QUALITY_REASONS = "quality_reasons"  # what lowered the quality, e.g. ["too_short"]
LABEL_FIELDS = (TYPE, QUALITY, QUALITY_REASONS)
CHUNK_TYPES = ("prose", "list", "table", "code", "qa", "heading", "boilerplate")

FROM_FILE = "file"
FROM_API = "api"
FROM_SOURCE = "source"  # a configured source's sync (rag_api.sources)
PROVENANCE = (
    ORIGIN,
    FILE,
    DOC_HASH,
    FILE_CHUNKS,
    URL,
    VERSION,
    PERSIST,
    DYNAMIC,
)  # who wrote a chunk; kept by an edit

# fields every collection indexes for filtering, and their kinds
INDEXED = {
    SOURCE: "keyword",
    FILE: "keyword",
    ORIGIN: "keyword",
    CHUNK_INDEX: "integer",
    SEQ: "integer",
    TYPE: "keyword",
    QUALITY: "float",
}
# where other tools keep the text and the document name, in the order they are tried
FOREIGN_TEXT_KEYS = ("page_content", "content", "document")
LLAMA_INDEX_NODE = "_node_content"  # LlamaIndex: the node as JSON, its text under TEXT
FOREIGN_SOURCE_KEYS = ("file_path", "file_name", "ref_doc_id", "doc_id")

_NAMESPACE = uuid.UUID("6f1b2c9e-3a4d-5e6f-8a9b-0c1d2e3f4a5b")


def point_id(collection: str, source: str, chunk_index: int) -> str:
    """Deterministic id of a chunk: re-indexing the same chunk overwrites instead of duplicating."""
    return str(uuid.uuid5(_NAMESPACE, f"{collection}\x00{source}\x00{chunk_index}"))


def chunk_ref(collection: str, source: str, chunk_index: int) -> str:
    """A chunk's id wherever a client meets it (citations, passage links, /v1/rag/*, MCP, the
    console): `collection:source#chunk_index`."""
    return f"{collection}:{source}#{chunk_index}"


def metadata_path(key: str) -> str:
    """The payload path of a metadata key, as filters and indexes name it."""
    return f"{METADATA}.{key}"


# --- building ----------------------------------------------------------------------------------


def file_provenance(rel: str, doc_hash: str, chunks: int) -> dict[str, Any]:
    """The provenance of a kb file's chunks: the file, the hash of the content indexed and how
    many chunks it made."""
    return {ORIGIN: FROM_FILE, FILE: rel, DOC_HASH: doc_hash, FILE_CHUNKS: chunks}


def source_provenance(
    doc_hash: str, chunks: int, version: Mapping[str, str], url: str | None
) -> dict[str, Any]:
    """The provenance of a source document's chunks (their `source` is `name:key`): the hash of
    the content indexed, how many chunks it made, the version the source gave, its link."""
    provenance = {ORIGIN: FROM_SOURCE, DOC_HASH: doc_hash, FILE_CHUNKS: chunks}
    provenance[VERSION] = dict(version)
    return provenance | ({URL: url} if url else {})


def api_provenance(persist: bool, dynamic: bool) -> dict[str, Any]:
    """The provenance every chunk written through the admin API carries."""
    return {ORIGIN: FROM_API, PERSIST: persist, DYNAMIC: dynamic}


def build(
    provenance: Mapping[str, Any],
    *,
    text: str,
    source: str,
    chunk_index: int,
    metadata: Mapping[str, Any],
    content_hash: str,
    embedder: str,
    title: str | None = None,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A chunk's payload, its metadata checked (422 INVALID_REQUEST naming the key), still without
    the fields its commit adds (see `stamped`); `labels`: LABEL_FIELDS (rag_api.points.labels)."""
    built = {
        **provenance,
        TEXT: text,
        SOURCE: source,
        CHUNK_INDEX: chunk_index,
        CONTENT_HASH: content_hash,
        METADATA: require_metadata(metadata),
        EMBEDDER: embedder,
    }
    if title is not None:
        built[TITLE] = title
    return {**built, **(labels or {})}


def stamped(payload: Mapping[str, Any], seq: int, indexed_at: str) -> dict[str, Any]:
    """The payload as committed: with its chunk number and the time it was written."""
    return {**payload, SEQ: seq, INDEXED_AT: indexed_at}


def migrated(payload: Mapping[str, Any], embedder: str, content_hash: str) -> dict[str, Any]:
    """A stored payload as a migration copies it: same fields, the new model's identity."""
    return {**payload, EMBEDDER: embedder, CONTENT_HASH: content_hash}


def edited_provenance(payload: Mapping[str, Any], marker: str) -> dict[str, Any]:
    """The provenance a chunk keeps when edited through the API; a kb-file or source chunk's
    DOC_HASH becomes `marker`, never a document's hash, so the next reconcile of its file (or
    sync of its source) restores it."""
    kept = {key: payload[key] for key in PROVENANCE if key in payload}
    if kept.get(ORIGIN) in (FROM_FILE, FROM_SOURCE):
        kept[DOC_HASH] = marker
    return kept


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A stored payload read field by field; a missing or ill-typed field reads as absent."""

    raw: Mapping[str, Any]

    @property
    def text(self) -> str:
        """The chunk text: TEXT, then LlamaIndex's node JSON, then other tools' keys."""
        return extract_text(self.raw)

    @property
    def source(self) -> str:
        """The document a chunk belongs to, under the hub's or a foreign tool's key."""
        return extract_source(self.raw)

    @property
    def chunk_index(self) -> int | None:
        return _int(self.raw.get(CHUNK_INDEX))

    @property
    def seq(self) -> int | None:
        return _int(self.raw.get(SEQ))

    @property
    def metadata(self) -> dict[str, Any]:
        value = self.raw.get(METADATA)
        return value if isinstance(value, dict) else {}

    @property
    def origin(self) -> str | None:
        return self.raw.get(ORIGIN)

    @property
    def file(self) -> str | None:
        """The kb file a file chunk came from (None for every other chunk)."""
        value = self.raw.get(FILE)
        return value if self.origin == FROM_FILE and isinstance(value, str) else None

    @property
    def url(self) -> str | None:
        """Where a person reads the original of a source's document (None: no link)."""
        value = self.raw.get(URL)
        return value if isinstance(value, str) and value else None

    @property
    def version(self) -> dict[str, str]:
        """A source document's version as its source gave it ({} for other chunks)."""
        value = self.raw.get(VERSION)
        return value if isinstance(value, dict) else {}

    @property
    def doc_hash(self) -> str:
        return str(self.raw.get(DOC_HASH))

    @property
    def file_chunks(self) -> int | None:
        return _int(self.raw.get(FILE_CHUNKS))

    @property
    def content_hash(self) -> str | None:
        value = self.raw.get(CONTENT_HASH)
        return value if isinstance(value, str) else None

    @property
    def title(self) -> str | None:
        """The document's title line that BM25 indexes with this chunk (None: no title)."""
        value = self.raw.get(TITLE)
        return value if isinstance(value, str) and value else None

    @property
    def type(self) -> str | None:
        """The chunk's type label (None: not labelled, e.g. written by another tool)."""
        value = self.raw.get(TYPE)
        return value if value in CHUNK_TYPES else None

    @property
    def quality(self) -> float | None:
        value = self.raw.get(QUALITY)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else None

    @property
    def quality_reasons(self) -> list[str]:
        value = self.raw.get(QUALITY_REASONS)
        return [r for r in value if isinstance(r, str)] if isinstance(value, list) else []

    def labels(self) -> dict[str, Any]:
        """The labels as shown wherever a chunk is shown ({} for an unlabelled chunk)."""
        if self.type is None:
            return {}
        return {TYPE: self.type, QUALITY: self.quality, QUALITY_REASONS: self.quality_reasons}

    @property
    def embedder(self) -> str | None:
        value = self.raw.get(EMBEDDER)
        return value if isinstance(value, str) else None

    @property
    def persist(self) -> bool:
        return bool(self.raw.get(PERSIST, True))

    @property
    def dynamic(self) -> bool:
        return bool(self.raw.get(DYNAMIC, False))

    def position(self) -> tuple[bool, int, str, int]:
        """Listing order: numbered chunks by number, then the rest by source and chunk index."""
        seq = self.seq
        return (seq is None, seq or 0, str(self.raw.get(SOURCE, "")), self.chunk_index or 0)


POSITION_FIELDS = [SEQ, SOURCE, CHUNK_INDEX]  # what StoredChunk.position reads
SOURCE_FIELDS = (SOURCE, *FOREIGN_SOURCE_KEYS)  # what StoredChunk.source reads


def extract_text(payload: Mapping[str, Any] | None) -> str:
    """The chunk text: TEXT, then LlamaIndex's `_node_content` JSON, then other common keys."""
    if not payload:
        return ""
    text = payload.get(TEXT)
    if isinstance(text, str) and text:
        return text
    node = payload.get(LLAMA_INDEX_NODE)
    if isinstance(node, str):
        try:
            node = json.loads(node)
        except ValueError:
            node = None
    if isinstance(node, dict) and isinstance(node.get(TEXT), str) and node[TEXT]:
        return node[TEXT]
    for key in FOREIGN_TEXT_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def extract_source(payload: Mapping[str, Any] | None) -> str:
    """The document a chunk belongs to, under the hub's or a foreign tool's key."""
    for key in (SOURCE, *FOREIGN_SOURCE_KEYS):
        value = (payload or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None
