"""Request bodies of /v1/rag/*: the field names the voice pipeline sends (its contract: kbadmin)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from rag_api.answering.models import Filters, MetadataValue, RoutingBlock, SearchFields
from rag_api.config import Language, Mode
from rag_api.errors import PayloadTooLarge
from rag_api.metadata import check_metadata, has_line_break_or_control
from rag_api.schema import Answer, Body, LabelQuality, LabelReasons, LabelType

SOURCE_MAX_CHARS = 512
DOCUMENT_MAX_CHARS = 200_000  # one /add/document or /upsert/document text
CHUNK_MAX_CHARS = 20_000  # one pre-chunked item, or a chunk's new_text
ITEMS_MAX = 256  # items per /add/chunks


def _check_source(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    if has_line_break_or_control(value):
        raise ValueError(
            "must not contain control characters (newlines, tabs, NUL, U+0085, U+2028...)"
        )
    return value


SourceName = Annotated[str, Field(max_length=SOURCE_MAX_CHARS), AfterValidator(_check_source)]
Metadata = Annotated[dict[str, Any], AfterValidator(check_metadata)]  # rules: rag_api.metadata
QueryText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8000)]


def check_size(what: str, text: str, limit: int) -> None:
    """413 when a text is over its limit (pydantic's max_length would say 422)."""
    if len(text) > limit:
        raise PayloadTooLarge(f"{what} has {len(text)} characters; the limit is {limit}")


class Routed(Body):
    """Every body may name its collection (else the query parameter, else default_collection)."""

    model_config = ConfigDict(extra="forbid")

    collection: str | None = None


class AddDocument(Routed):
    text: str
    source: SourceName | None = None  # omitted: dynamic#<index>
    metadata: Metadata = {}
    persist: bool = True
    dynamic: bool = True


class NewChunk(Body):
    model_config = ConfigDict(extra="forbid")

    text: Annotated[str, Field(min_length=1)]
    source: SourceName | None = None
    metadata: Metadata = {}


class AddChunks(Routed):
    items: Annotated[list[NewChunk], Field(min_length=1)]
    persist: bool = True
    dynamic: bool = True


class UpsertDocument(Routed):
    source: SourceName
    text: str  # "" deletes the document
    metadata: Metadata = {}
    persist: bool = True
    dynamic: bool = True


class UpdateChunk(Routed):
    index: Annotated[int, Field(ge=0)] | None = None
    source: SourceName | None = None
    chunk_index: Annotated[int, Field(ge=0)] | None = None
    new_text: Annotated[str, Field(min_length=1)] | None = None
    new_metadata: Metadata | None = None
    new_source: SourceName | None = None

    @model_validator(mode="after")
    def _target_and_change(self) -> UpdateChunk:
        if self.index is None and self.source is None:
            raise ValueError("give `index` (from a listing) or `source` (+ `chunk_index`)")
        if self.new_text is None and self.new_metadata is None and self.new_source is None:
            raise ValueError("nothing to update: give new_text, new_metadata or new_source")
        return self


class Remove(Routed):
    source_prefix: SourceName
    exact: bool = False


class Reload(Routed):
    force_rebuild: bool = False
    prune: bool = False  # remove the chunks of a mass of vanished files (rag-hub index --prune)


class Search(SearchFields, Routed):
    # answer at once (202) and do the work in the background: the same request without it then
    # gets that work (rag_api.kbadmin.prefetch)
    prefetch: bool = False


class Context(Search):
    language: Language | None = None  # header language; default: the collection's


class ChunkFilters(BaseModel):
    """Listing filters, paging and optional relevance order (GET query parameters or POST body)."""

    collection: str | None = None
    source_exact: SourceName | None = None
    source_prefix: SourceName | None = None
    query: QueryText | None = None
    min_score: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 50
    offset: Annotated[int, Field(ge=0)] = 0
    include_text: bool = True


def _metadata_keys(value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    return Filters(metadata=value).metadata  # the /query filters' key rules


class ListChunks(ChunkFilters, Body):
    model_config = ConfigDict(extra="forbid")

    metadata: Annotated[dict[str, MetadataValue], AfterValidator(_metadata_keys)] = {}


# --- answers


class Result(Answer):
    """A /v1/rag/search or /context result: `score` is the cosine similarity."""

    id: str | None = None  # `collection:source#chunk_index`: the chunk's id everywhere
    text: str
    source: str
    score: float
    chunk_index: int
    metadata: dict[str, Any]
    url: str | None = None  # where a person reads the original (a source's document)
    type: LabelType = None
    quality: LabelQuality = None
    quality_reasons: LabelReasons = None
    collection: str | None = None  # the passage's collection, in `auto` answers


class SearchResults(Answer):
    query: str
    count: int
    results: list[Result]
    collection: str
    mode: Mode
    routing: RoutingBlock | None = None  # only from `auto`
    cached: bool | None = None  # only when prefetched work answered


class ContextBlock(Answer):
    block: str  # exactly the text to inject
    results: list[Result]
    injected: int
    collection: str
    mode: Mode
    timings_ms: dict[str, float]
    routing: RoutingBlock | None = None  # only from `auto`
    cached: bool | None = None  # only when prefetched work answered (its timings are that work's)


class Prefetching(Answer):
    """The acknowledgement of a prefetch (202): ask the same request without it to get the work."""

    prefetching: Literal[True]


class SourceCount(Answer):
    source: str
    chunk_count: int
    has_dynamic: bool


class SourceList(Answer):
    count: int
    items: list[SourceCount]


class ChunkItem(Answer):
    id: str  # `collection:source#chunk_index`: the chunk's id everywhere
    index: int | None  # the chunk's stable number, what /chunks/update accepts
    source: str
    chunk_index: int
    score: float | None
    metadata: dict[str, Any]
    url: str | None = None  # where a person reads the original (a source's document)
    type: LabelType = None
    quality: LabelQuality = None
    quality_reasons: LabelReasons = None
    is_dynamic: bool
    origin: str | None
    persist: bool
    text: str | None = None  # only with include_text


class ChunkPage(Answer):
    total: int
    offset: int
    limit: int
    query: str | None
    items: list[ChunkItem]


class Status(Answer):
    """GET /v1/rag/status: counts, models and settings of a collection, and its folder watcher."""

    enabled: bool
    collection: str
    default_collection: str | None  # null: the key may not read it
    chunks: int
    sources: int
    api_chunks: int
    temporary_chunks: int
    embedding_model: str
    embedding_dim: int
    device: str  # in-process embedders: cpu, cuda:N or mps (batches); else the provider's URL
    precision: str | None  # fp32, fp16, bf16 or int8; null for a remote embedder
    query_device: str | None  # where one query is embedded (the CPU path may answer it faster)
    language: str
    top_k: int
    threshold: float
    mode: Mode
    chunk_size: int
    chunk_overlap: int
    kb_path: str | None
    kb_folder: str | None  # "kb folder missing: ..." when the folder cannot be read
    store: str
    role: str  # all, writer or reader (docs/scaling.md)
    physical: str | None
    llm: dict[str, Any]  # provider, model and its server's circuit
    # provider, model and its device and precision (local) or its server's circuit (http); null
    # without an enabled rerank block
    rerank: dict[str, Any] | None
    indexer: dict[str, Any]  # `running`, and the watcher's row for the collection when it runs


class Added(Answer):
    """/add/document and /add/chunks."""

    added: int
    sources: list[str]
    total_after: int  # the collection's chunks after the write


class Upserted(Answer):
    """/upsert/document: the source's chunks replaced whole."""

    removed: int
    added: int
    sources: list[str]
    total_after: int
    mode: Literal["upsert"]


class Updated(Answer):
    """/chunks/update: the chunk as it is now (its text included)."""

    updated: int
    chunk: ChunkItem


class Removed(Answer):
    """/remove."""

    removed: int
    total_after: int


class Reloaded(Answer):
    """/reload: the folder's reconcile (rag_api.indexing.sync.SyncReport), then the temporary
    chunks dropped."""

    collection: str
    files: int
    unchanged: int
    indexed: int
    removed_files: int
    chunks_embedded: int
    chunks_reused: int
    chunks_deleted: int
    chunks_written: int
    errors: dict[str, str]
    warnings: dict[str, list[str]]
    skipped: dict[str, str]
    seconds: float
    force_rebuild: bool
    temporary_removed: int
    total_after: int
