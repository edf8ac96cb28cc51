"""What the hub's own routes answer: the response models /openapi.json documents.

The routes build plain dicts; FastAPI checks them against these models on the way out (routes
whose keys are sometimes absent, like `warning`, drop what was not set rather than add nulls). A
key a route answers must be declared here: an undeclared one is an error, never silently dropped.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rag_api.config import ChunkType, Mode


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# a chunk's labels (docs/labels.md), wherever a chunk is shown; absent on a chunk without them
# (written before labels, or by another tool)
LabelType = ChunkType | None  # prose, list, table, code, qa, heading or boilerplate
LabelQuality = float | None  # 0..1
LabelReasons = list[str] | None  # what lowered the quality: too_short, broken_extraction, ...


class Ready(Answer):
    """GET /ready; `store`, `collections` and `disk` only for a caller with the reader key."""

    status: str
    kb_folders: dict[str, str]  # collection -> why its kb folder cannot be read (still served)
    llm: dict[str, str]  # collection -> its LLM server's circuit: closed, open or half-open
    rerank: dict[str, str] = {}  # collection -> its rerank server's circuit (provider http)
    store: str | None = None
    collections: list[str] | None = None
    disk: dict[str, Any] | None = None  # free space of the store's disk, when it is watched
    # collection -> its embedder's device, precision and query device
    embedders: dict[str, dict[str, str | None]] | None = None
    rerankers: dict[str, dict[str, Any]] | None = None  # collection -> as in /v1/rag/status


class CollectionSummary(Answer):
    name: str
    description: str
    enabled: bool
    language: str
    kb: str | None
    embedder: str  # provider:model
    dim: int
    device: str  # where the embedder runs (cpu, cuda:N, mps) or a remote model's URL
    precision: str | None  # fp32, fp16, bf16 or int8; null for a remote embedder
    mode: Mode
    llm: str  # "extractive" or provider:model
    rerank: dict[str, Any] | None  # as in /v1/rag/status; null without an enabled rerank block
    physical: str | None  # the Qdrant collection the alias points at
    points: int
    hybrid: bool  # the store holds BM25 vectors
    error: dict[str, str] | None = None  # code and message, when the store could not be read


class CollectionList(Answer):
    default_collection: str | None  # null: the key may not read it
    collections: list[CollectionSummary]


class Candidate(Answer):
    """A collection `auto` considered: its probe score (null: not probed) and what the question
    says about it (`keyword:…`, `entity:…`, `language:…`)."""

    collection: str
    probe_score: float | None
    signals: list[str]
    passages: int | None  # passages above its threshold (null: not searched)


class RoutingBlock(Answer):
    """Which collections `auto` searched and why (docs/routing.md)."""

    decision: Literal["narrow", "wide"]
    reason: Literal["explicit", "signals", "description", "language", "probe", "wide", "widened"]
    candidates: list[Candidate]
    searched: list[str]


class Source(Answer):
    """A passage an answer is grounded in, with its score on each side of the search."""

    source: str
    chunk_index: int
    score: float
    text: str
    metadata: dict[str, Any]
    type: LabelType = None
    quality: LabelQuality = None
    quality_reasons: LabelReasons = None
    dense_score: float | None
    dense_rank: int | None
    sparse_score: float | None
    sparse_rank: int | None
    rerank_score: float | None
    collection: str | None = None  # the passage's collection, in `auto` answers


class Usage(Answer):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class QueryAnswer(Answer):
    """POST /query/{collection}; with generate=false answer, generator, model and usage are null."""

    collection: str
    mode: Mode
    answer: str | None
    generator: str | None
    model: str | None
    usage: Usage | None
    sources: list[Source]
    warning: str | None = None  # present only when something degraded the answer
    timings_ms: dict[str, float]
    routing: RoutingBlock | None = None  # only from `auto`


class Result(Answer):
    """A /v1/rag/search or /context result: `score` is the cosine similarity."""

    text: str
    source: str
    score: float
    chunk_index: int
    metadata: dict[str, Any]
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


class ContextBlock(Answer):
    block: str  # exactly the text to inject
    results: list[Result]
    injected: int
    collection: str
    mode: Mode
    timings_ms: dict[str, float]
    routing: RoutingBlock | None = None  # only from `auto`


class SourceCount(Answer):
    source: str
    chunk_count: int
    has_dynamic: bool


class SourceList(Answer):
    count: int
    items: list[SourceCount]


class ChunkItem(Answer):
    index: int | None  # the chunk's stable number, what /chunks/update accepts
    source: str
    chunk_index: int
    score: float | None
    metadata: dict[str, Any]
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
    physical: str | None
    llm: dict[str, Any]  # provider, model and its server's circuit
    # provider, model and its device and precision (local) or its server's circuit (http); null
    # without an enabled rerank block
    rerank: dict[str, Any] | None
    indexer: dict[str, Any]  # `running`, and the watcher's row for the collection when it runs


# --- the OpenAI-compatible routes: OpenAI's objects, plus the hub's `sources`, `generator`, `warning`


class ModelCard(Answer):
    id: str  # a collection name
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(Answer):
    object: Literal["list"]
    data: list[ModelCard]


class HubFields(Answer):
    sources: list[Source]
    generator: str | None  # who answered: the LLM provider, or "extractive"
    warning: str | None = None  # present only when something degraded the answer
    routing: RoutingBlock | None = None  # only from `auto`


class AssistantMessage(Answer):
    role: Literal["assistant"]
    content: str
    refusal: None


class CompletionChoice(Answer):
    index: int
    message: AssistantMessage
    logprobs: None
    finish_reason: str


class ChatCompletion(HubFields):
    """A `chat.completion`; with `stream: true`, `chat.completion.chunk` server-sent events."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    system_fingerprint: None
    choices: list[CompletionChoice]
    usage: Usage


class OutputText(Answer):
    type: Literal["output_text"]
    text: str
    annotations: list[Any]
    logprobs: list[Any]


class OutputMessage(Answer):
    type: Literal["message"]
    id: str
    status: str
    role: Literal["assistant"]
    content: list[OutputText]


class FunctionCallItem(Answer):
    type: Literal["function_call"]
    id: str
    call_id: str
    name: str
    arguments: str  # JSON
    status: str


class ResponseObject(HubFields):
    """A Responses API `response`; with `stream: true`, its server-sent event sequence."""

    id: str
    object: Literal["response"]
    created_at: int
    status: Literal["completed", "incomplete"]
    error: None
    incomplete_details: dict[str, str] | None
    instructions: str | None
    max_output_tokens: int | None
    model: str
    output: list[OutputMessage | FunctionCallItem]
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: None
    store: bool
    temperature: float | None
    text: dict[str, Any]
    tool_choice: str | dict[str, Any]
    tools: list[Any]
    top_p: float | None
    truncation: str
    usage: dict[str, Any]  # input_tokens, output_tokens, total_tokens and their details
    user: None
    metadata: dict[str, str]


STREAMED = {200: {"content": {"text/event-stream": {}}}}  # the same route with `stream: true`
