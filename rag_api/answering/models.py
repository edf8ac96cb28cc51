"""The query surface's requests and answers: the body of POST /query/{collection} (and the CLI's
`rag-hub query`), its filters, and the answer it returns (`QueryAnswer`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from rag_api.config import ChunkType, Mode, check_metadata_keys
from rag_api.metadata import MAX_KEYS, value_problem
from rag_api.schema import Answer, Body, LabelQuality, LabelReasons, LabelType
from rag_api.search.retrieval import SearchRequest

MetadataValue = str | int | float | bool
SOURCES_MAX = 1024  # documents in one query's allowlist


class Filters(Body):
    model_config = ConfigDict(extra="forbid")

    # each key is one more condition on every candidate point: no more than metadata can hold
    metadata: Annotated[dict[str, MetadataValue], Field(max_length=MAX_KEYS)] = {}
    source_prefix: Annotated[str, Field(min_length=1, max_length=512)] | None = None
    # labels (docs/labels.md); absent: the collection's retrieval.types / retrieval.min_quality
    types: Annotated[list[ChunkType], Field(min_length=1)] | None = None
    min_quality: Annotated[float, Field(ge=0.0, le=1.0)] | None = None

    _keys = field_validator("metadata")(check_metadata_keys)

    @field_validator("metadata")
    @classmethod
    def _matchable(cls, value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
        """Values the store can compare (the CLI builds this model without a JSON body)."""
        if problem := value_problem(value):
            raise ValueError(problem[1])
        return value

    def applied(self, request: SearchRequest) -> SearchRequest:
        """`request` with these filters (what they leave out, the collection decides)."""
        return replace(
            request,
            source_prefix=self.source_prefix,
            metadata=self.metadata,
            types=tuple(self.types) if self.types is not None else None,
            min_quality=self.min_quality,
        )


CollectionName = Annotated[str, Field(min_length=1, max_length=63)]


class SearchFields(Body):
    """What every retrieval request carries (here and in the /v1/rag admin API)."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, Field(max_length=8000)]
    top_k: Annotated[int, Field(ge=1, le=100)] | None = None
    threshold: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    filters: Filters | None = None
    # the candidates of the routing collection (`auto`): only these are probed and searched
    collections: Annotated[list[CollectionName], Field(min_length=1, max_length=64)] | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    def search_request(self) -> SearchRequest:
        """The retrieval these fields ask for (what they leave out, the collection decides)."""
        request = SearchRequest(query=self.query, top_k=self.top_k, threshold=self.threshold)
        return (self.filters or Filters()).applied(request)


class QueryBody(SearchFields):
    relative_threshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    generate: bool = True
    stream: bool = False  # server-sent events as the answer is made (rag_api.answering.stream)
    mode: Mode | None = None
    # an allowlist is one more condition on every candidate (60,000 names took 3.5 s a query)
    sources: (
        Annotated[
            list[Annotated[str, Field(min_length=1, max_length=512)]], Field(max_length=SOURCES_MAX)
        ]
        | None
    ) = None
    rerank: bool | None = None  # None: the collection's rerank block decides
    diversity: Annotated[float, Field(ge=0.0, le=1.0)] | None = None  # MMR, 0 = off

    def search_request(self) -> SearchRequest:
        return replace(
            super().search_request(),
            mode=self.mode,
            sources=tuple(self.sources) if self.sources is not None else None,
            relative_threshold=self.relative_threshold,
            rerank=self.rerank,
            diversity=self.diversity,
        )


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

    id: str | None = None  # `collection:source#chunk_index`: the chunk's id everywhere
    source: str
    chunk_index: int
    score: float
    text: str
    metadata: dict[str, Any]
    url: str | None = None  # where a person reads the original (a source's document)
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
