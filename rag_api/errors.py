"""The error hierarchy: every failure the hub reports has a stable code, an HTTP status and a message;
credentials never leave the process: a URL is shown without the user:password in it."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@]+@")


def redact(text: str) -> str:
    """`text` with the user:password part of every URL in it replaced by ***."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


class RagError(Exception):
    """Base of every error the hub reports; rendered as {"error": {"code", "message"}}."""

    code = "INTERNAL_ERROR"
    status = 500
    headers: dict[str, str] | None = None  # response headers the error needs (Retry-After)

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class ConfigError(RagError):
    code = "CONFIG_INVALID"
    status = 500


class InvalidRequest(RagError):
    code = "INVALID_REQUEST"
    status = 422


class PayloadTooLarge(RagError):
    code = "PAYLOAD_TOO_LARGE"
    status = 413


class Unauthorized(RagError):
    """No key, or a key the hub does not know."""

    code = "UNAUTHORIZED"
    status = 401


class NotFound(RagError):
    """A page or document the hub does not have (an OAuth metadata document without a provider)."""

    code = "NOT_FOUND"
    status = 404


class Forbidden(RagError):
    """A known key that may not do this: the reader key asking for a write."""

    code = "FORBIDDEN"
    status = 403
    scope: str | None = None  # what an access token lacks (rag:write:docs), for its challenge


class CollectionNotFound(RagError):
    code = "COLLECTION_NOT_FOUND"
    status = 404

    def __init__(self, name: str) -> None:
        super().__init__(f"collection '{name}' is not configured in collections.yaml")
        self.name = name


class CollectionDisabled(RagError):
    code = "RAG_NOT_ENABLED"
    status = 503

    def __init__(self, name: str) -> None:
        super().__init__(f"collection '{name}' is disabled (enabled: false in collections.yaml)")


class EvalTooLong(RagError):
    """An evaluation asked over HTTP that needs more than one request may take (RAG_EVAL_MAX_S)."""

    code = "EVAL_TOO_LONG"
    status = 413


class ChunkNotFound(RagError):
    code = "CHUNK_NOT_FOUND"
    status = 404


class AmbiguousSource(RagError):
    code = "AMBIGUOUS_SOURCE"
    status = 409


class DimensionMismatch(RagError):
    """The stored vectors do not match the configured embedder: writes are refused until a migration."""

    code = "DIMENSION_MISMATCH"
    status = 409


class EmbedderMismatch(DimensionMismatch):
    code = "EMBEDDER_MISMATCH"


class KbFolderMissing(RagError):
    """A kb folder that is missing, unreadable or not a directory: nothing is synced or deleted."""

    code = "KB_FOLDER_MISSING"
    status = 409


class MassRemoval(RagError):
    """A reconcile would remove most of a collection's files at once: held until pruned."""

    code = "MASS_REMOVAL_HELD"
    status = 409


class MigrationInProgress(RagError):
    code = "MIGRATION_IN_PROGRESS"
    status = 409


class MigrationFailed(RagError):
    """A migration stopped before its alias swap: the live collection is untouched; re-run it."""

    code = "MIGRATION_FAILED"
    status = 500


class NoPreviousCollection(RagError):
    code = "NO_PREVIOUS_COLLECTION"
    status = 409


class SourceNotFound(RagError):
    """A collection without a source of that name (collections.yaml's `sources:`)."""

    code = "SOURCE_NOT_FOUND"
    status = 404


class StoreLocked(RagError):
    code = "STORE_LOCKED"
    status = 503


class UpstreamUnavailable(RagError):
    """An upstream (Qdrant, Ollama, an embeddings or chat API) failed; the message names it."""

    code = "UPSTREAM_UNAVAILABLE"
    status = 503

    def __init__(self, upstream: str, detail: str) -> None:
        super().__init__(redact(f"{upstream} unavailable: {_cut(detail)}"))
        self.upstream = upstream


class SourceUnavailable(UpstreamUnavailable):
    """A source (a web site, a bucket, a repository) could not be listed or read: nothing was
    removed, its chunks stay; the next sync tries again."""

    code = "SOURCE_UNAVAILABLE"


class StoreUnavailable(UpstreamUnavailable):
    code = "STORE_UNAVAILABLE"


class StoreCorrupted(StoreUnavailable):
    """The embedded store holds data it cannot read back (written before the hub refused it)."""

    code = "STORE_CORRUPTED"

    def __init__(self, detail: str) -> None:
        RagError.__init__(
            self,
            f"embedded Qdrant cannot read its stored data back ({_cut(detail, 160)}); "
            "`rag-hub check --repair` rebuilds the collection from what is readable and its kb folder",
        )
        self.upstream = "embedded Qdrant"


class WriterUnavailable(UpstreamUnavailable):
    """A reader could not reach the deployment's writer with a write (docs/scaling.md)."""

    code = "WRITER_UNAVAILABLE"


class ReaderReadOnly(RagError):
    """A write reached the store of a reader (one not sent to the writer over HTTP)."""

    code = "READER_READ_ONLY"
    status = 409


class AnotherWriter(RagError):
    """A second writer on a deployment that has one (docs/scaling.md)."""

    code = "ANOTHER_WRITER"
    status = 409


class EmbedderUnavailable(UpstreamUnavailable):
    code = "EMBEDDER_UNAVAILABLE"


class LLMUnavailable(UpstreamUnavailable):
    code = "LLM_UNAVAILABLE"


class InsufficientStorage(RagError):
    """The embedded store's disk has too little free space for a write (RAG_MIN_FREE_MB)."""

    code = "INSUFFICIENT_STORAGE"
    status = 507


class UnsupportedFileType(RagError):
    """An upload of a type no reader handles (rag_api.indexing.readers)."""

    code = "UNSUPPORTED_FILE_TYPE"
    status = 415


class FileExists(RagError):
    code = "FILE_EXISTS"
    status = 409


class FileNotFound(RagError):
    code = "FILE_NOT_FOUND"
    status = 404


class JobNotFound(RagError):
    code = "JOB_NOT_FOUND"
    status = 404


class IndexingFailed(RagError):
    """An upload job with a file that could not be indexed (each file of the job says why)."""

    code = "INDEXING_FAILED"
    status = 422


class NoKbFolder(RagError):
    """A collection fed only through the admin API (no `kb:`) has no folder to hold files."""

    code = "NO_KB_FOLDER"
    status = 409


class QueueFull(RagError):
    """The bounded indexing queue has no room: the client should retry after `retry_after` s."""

    code = "QUEUE_FULL"
    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after)}


class BackupInvalid(RagError):
    """A backup that is missing, corrupt, truncated or not one: refused before anything changes."""

    code = "BACKUP_INVALID"
    status = 422


class NotReady(RagError):
    code = "NOT_READY"
    status = 503


class DocumentNotFound(RagError):
    """A collection without a document of that source name (an MCP `fetch`)."""

    code = "DOCUMENT_NOT_FOUND"
    status = 404


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
