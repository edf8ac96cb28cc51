"""What the MCP tools take and answer, as the JSON schemas `tools/list` publishes: each argument
typed and described, each tool's `outputSchema` (its answer is checked against it) and its
annotations. The limits are the hub's own (rag_api.answering.models, rag_api.metadata,
rag_api.kbadmin.models), so a client's schema check and the hub's agree."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, WithJsonSchema

from rag_api.answering.models import SOURCES_MAX, Filters
from rag_api.config import METADATA_KEY
from rag_api.kbadmin.models import DOCUMENT_MAX_CHARS, SOURCE_MAX_CHARS
from rag_api.metadata import KEY_MAX_CHARS, LIST_MAX_ITEMS, MAX_KEYS, STRING_MAX_CHARS
from rag_api.schema import Answer, LabelQuality, LabelType

SCORES = (
    "`score` orders the results: in hybrid mode (the default) the dense and BM25 sides fused "
    "(DBSF, plus the evidence of the document's other passages), not a similarity and not bounded: "
    "compare it only within one search; in dense mode it is the cosine similarity, in sparse mode "
    "the BM25 score. `dense_score` is the cosine similarity of question and passage (-1 to 1; "
    "null in sparse mode), the scale of the collection's `threshold`."
)
IDS = (
    "Ids are 'collection:source#chunk_index' (one passage) or 'collection:source' (the whole "
    "document); only the first ':' ends the collection, so a source may hold ':' itself "
    "(a synced page is 'name:https://...')."
)

# --- arguments

Query = Annotated[
    str, Field(min_length=1, max_length=8000, description="The question or keywords, as asked")
]
CollectionArg = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=63,
        description="A collection name (list_collections), or 'auto' to search where the "
        "question belongs. Default: auto when this key reads several collections, else its one",
    ),
]
TopK = Annotated[int, Field(ge=1, le=100, description="How many passages, 1 to 100")]
SourceName = Annotated[str, Field(min_length=1, max_length=SOURCE_MAX_CHARS)]
Sources = Annotated[
    list[SourceName] | None,
    Field(
        max_length=SOURCES_MAX,
        description="Only passages of these documents (their `source` names, exactly)",
    ),
]
Id = Annotated[str, Field(min_length=3, max_length=2000, description=f"An `id` from search. {IDS}")]
RemovedSource = Annotated[
    str,
    Field(
        min_length=1, max_length=SOURCE_MAX_CHARS, description="The document's name (its source)"
    ),
]
WriteCollection = Annotated[
    str, Field(min_length=1, max_length=63, description="The collection to write (by name)")
]
DocumentSource = Annotated[
    str,
    Field(
        min_length=1,
        max_length=SOURCE_MAX_CHARS,
        description="The document's name in the collection, e.g. 'notes/customer-42.md': "
        "writing the same name again replaces the document",
    ),
]
DocumentText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=DOCUMENT_MAX_CHARS,
        description="The document's text (split into passages as the collection's files are)",
    ),
]
_SCALARS: list[dict[str, Any]] = [
    {"type": "string", "maxLength": STRING_MAX_CHARS},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
]
# the rules of rag_api.metadata.check_metadata, which the write itself applies (with its words)
METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Metadata of every passage of the document: keys (1 to "
    f"{KEY_MAX_CHARS} characters) to a string, number, boolean or null, or a flat list of those "
    f"(at most {LIST_MAX_ITEMS}); at most {MAX_KEYS} keys. search's `filters.metadata` matches "
    "these values",
    "maxProperties": MAX_KEYS,
    "propertyNames": {"minLength": 1, "maxLength": KEY_MAX_CHARS},
    "additionalProperties": {
        "anyOf": [
            *_SCALARS,
            {"type": "array", "items": {"anyOf": _SCALARS}, "maxItems": LIST_MAX_ITEMS},
        ]
    },
}
Metadata = Annotated[dict[str, Any] | None, WithJsonSchema(METADATA_SCHEMA)]
FILTER_FIELDS = {
    "metadata": "Only passages whose metadata has each of these values: key to a string, "
    "number or boolean (keys: letters, digits, '_' or '-')",
    "source_prefix": "Only documents whose source name starts with this",
    "types": "Only passages of these labels (prose, list, table, code, qa, heading, "
    "boilerplate). Default: the collection's (boilerplate left out)",
    "min_quality": "Only passages labelled at least this quality, 0 to 1. Default: the "
    "collection's",
}


def _described(schema: dict[str, Any]) -> None:
    for name, prop in schema.get("properties", {}).items():
        if name in FILTER_FIELDS:
            prop["description"] = FILTER_FIELDS[name]
    metadata = schema.get("properties", {}).get("metadata")
    if metadata is not None:
        metadata["propertyNames"] = {"pattern": METADATA_KEY.pattern}


class SearchFilters(Filters):
    """What a search keeps, as /query's `filters` (the same model and checks, described)."""

    model_config = ConfigDict(json_schema_extra=_described)


# inline (no $ref): some clients' function calling does not follow references
FiltersArg = Annotated[
    SearchFilters | None,
    WithJsonSchema(
        {
            **SearchFilters.model_json_schema(),
            "description": "Narrow the search: metadata values, a source prefix, labels, quality",
        }
    ),
]

# --- answers (each tool's outputSchema; every answer is checked against it)

URL = (
    "Where a person reads it: its source's own address (a synced web page, a Git link), else "
    "its passage page on the hub (a signed link that opens without a key, for a while)"
)


class Passage(Answer):
    """A passage as search and answer show it."""

    id: str = Field(description=f"What fetch reads. {IDS}")
    title: str = Field(description="The document's name (its source)")
    collection: str
    source: str
    chunk_index: int
    score: float = Field(description=SCORES)
    dense_score: float | None = Field(description="Cosine similarity, -1 to 1 (null: sparse)")
    type: LabelType = None
    quality: LabelQuality = None
    text: str
    metadata: dict[str, Any]
    url: str | None = Field(None, description=URL)


class Found(Answer):
    results: list[Passage] = Field(description="Best first")


class Fetched(Answer):
    """A passage (with `chunk_index`) or a whole document (with `chunks`)."""

    id: str
    title: str
    collection: str
    source: str
    chunk_index: int | None = Field(None, description="The passage's number (a passage's id)")
    chunks: int | None = Field(None, description="The document's passages (a document's id)")
    text: str = Field(description="The passage, or the document's passages (the first 1000)")
    metadata: dict[str, Any]
    url: str | None = Field(None, description=URL)


class CollectionRow(Answer):
    name: str
    language: str
    description: str
    model: str = Field(description="The embedding model (provider:model)")
    chunks: int = Field(description="Passages stored")
    enabled: bool


class Collections(Answer):
    collections: list[CollectionRow]


class Answered(Answer):
    answer: str | None = Field(description="The answer, citing its sources as [n]")
    collection: str = Field(description="The collection that answered (auto names its choice)")
    searched: list[str] = Field(description="The collections whose passages it read")
    sources: list[Passage] = Field(description="The passages cited: [1] is the first")
    generator: str | None = Field(
        description="What wrote it: 'extractive' (quoted passages), 'none' (no passage found) "
        "or the LLM's name"
    )
    warning: str | None = None


class Written(Answer):
    collection: str
    source: str
    ids: list[str] = Field(description="The document's passages as fetch reads them, in order")
    added: int
    removed: int = Field(description="Passages of the document's earlier version")
    total_after: int = Field(description="The collection's passages after the write")


class Removed(Answer):
    collection: str
    source: str
    removed: int
    total_after: int


READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# a document replaces its own earlier version only: nothing else of the collection is touched
UPSERTS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
