"""Answer generation: the generator contract (pieces, options, usage), the router of configured LLMs
(one circuit breaker per upstream server) and stream helpers; the upstream clients: .upstreams."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rag_api.config import LLMConfig, LLMTimeouts
from rag_api.errors import LLMUnavailable, redact
from rag_api.llm.breaker import CircuitBreaker
from rag_api.providers import LLMS
from rag_api.settings import Settings

Messages = list[dict[str, Any]]  # OpenAI chat messages (a tool exchange carries more than text)


@dataclass
class ToolCallDelta:
    """A piece of a tool call, as OpenAI streams them (`delta.tool_calls[i]`): the first piece of
    call `index` carries its `id` and `name`, every piece a part of its JSON `arguments`."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""

    def as_delta(self) -> dict[str, Any]:
        function: dict[str, Any] = {"arguments": self.arguments}
        if self.name is not None:
            function["name"] = self.name
        delta: dict[str, Any] = {"index": self.index, "function": function}
        if self.id is not None:
            delta |= {"id": self.id, "type": "function"}
        return delta


Piece = str | ToolCallDelta


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass(frozen=True)
class Options:
    """What a client asked of the generation besides temperature and the token limit, forwarded to
    the upstream as is (None / empty: the upstream's own default). Ollama takes them in its
    `options`; an OpenAI-compatible server as request fields of the same names."""

    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    # forwarded to an LLM that takes them (`Generator.structured`), in OpenAI's chat form
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: Any = None  # "auto", "none", "required" or {"type": "function", ...}
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None  # json_object or json_schema; text is None

    @property
    def forced_tool(self) -> bool:
        """Whether the client demands a tool call (required, or a named function)."""
        return self.tool_choice == "required" or isinstance(self.tool_choice, dict)

    @property
    def offers_tools(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"

    def fields(self) -> dict[str, Any]:
        """The options that were set, by their OpenAI names."""
        fields: dict[str, Any] = {
            "top_p": self.top_p,
            "seed": self.seed,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
        }
        fields = {name: value for name, value in fields.items() if value is not None}
        if self.stop:
            fields["stop"] = list(self.stop)
        return fields


@dataclass
class Generation:
    """A generation in progress: `Generator.stream` reads the client's `options`, yields its
    text, then fills in usage and finish_reason. A plugin's generator may ignore `options`."""

    name: str
    model: str | None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    options: Options = field(default_factory=Options)


class Generator(ABC):
    name: str
    model: str | None = None
    structured = False  # takes tools and response_format (generation.options); may yield tool calls
    forces_tools = False  # honours tool_choice required / a named function

    @abstractmethod
    def stream(
        self, messages: Messages, generation: Generation, temperature: float, max_tokens: int | None
    ) -> Iterator[Piece]:
        """Text pieces (and, from a `structured` generator, tool call pieces) as the model
        produces them; raises LLMUnavailable before the first piece when the model cannot be
        reached."""


class Generators:
    """One generator per (provider, model, base URL, timeouts); one circuit breaker per upstream
    server (provider, base URL), shared by every collection and model it serves."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._cache: dict[tuple[str, str | None, str | None, LLMTimeouts], Generator | None] = {}
        self._breakers: dict[tuple[str, str], CircuitBreaker] = {}
        self._lock = threading.Lock()

    def get(self, cfg: LLMConfig) -> Generator | None:
        """The configured LLM, or None for the extractive (no LLM) provider."""
        key = (cfg.provider, cfg.model, cfg.base_url, cfg.timeouts)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = LLMS.build(cfg, self.settings)
            return self._cache[key]

    def breaker(self, cfg: LLMConfig) -> CircuitBreaker | None:
        """The circuit breaker of the configured LLM's server (None for extractive)."""
        if cfg.provider == "extractive":
            return None
        key = (cfg.provider, cfg.base_url or self.settings.ollama_url)
        with self._lock:
            if key not in self._breakers:
                self._breakers[key] = CircuitBreaker(
                    f"{cfg.provider} at {redact(key[1])}",  # the name goes to logs
                    self.settings.llm_failures,
                    self.settings.llm_cooldown_s,
                )
            return self._breakers[key]

    def describe(self, cfg: LLMConfig) -> dict[str, Any]:
        """The LLM as status endpoints show it: provider, model and its server's circuit."""
        breaker = self.breaker(cfg)
        if breaker is None:
            return {"provider": cfg.provider}
        return {"provider": cfg.provider, "model": cfg.model, "circuit": breaker.describe()}

    def stream(
        self,
        cfg: LLMConfig,
        messages: Messages,
        generation: Generation,
        temperature: float,
        max_tokens: int | None,
    ) -> Iterator[Piece]:
        """The configured LLM's pieces (see Generator.stream), refused at once while its server's
        circuit is open, cut after `timeouts.total`; every outcome is reported to the breaker."""
        generator, breaker = self.get(cfg), self.breaker(cfg)
        assert generator is not None and breaker is not None
        upstream_name = f"LLM {breaker.name} ({cfg.model})"
        if not breaker.allow():
            raise LLMUnavailable(
                upstream_name,
                f"{breaker.threshold} failures in a row, not called for "
                f"{breaker.retry_in():.0f} more s",
            )
        deadline = time.monotonic() + cfg.timeouts.total
        upstream = generator.stream(messages, generation, temperature, max_tokens)
        verdict = breaker.abandoned  # the reader stopped before any piece: no verdict
        try:
            for piece in upstream:
                if time.monotonic() > deadline:
                    raise LLMUnavailable(
                        upstream_name, f"no complete answer within {cfg.timeouts.total:g} s"
                    )
                verdict = breaker.succeeded  # a piece came: the server works (unless it breaks)
                yield piece
            verdict = breaker.succeeded
        except LLMUnavailable:
            verdict = breaker.failed
            raise
        finally:
            upstream.close()  # type: ignore[attr-defined]
            verdict()


class ThinkFilter:
    """Drops <think>…</think> from a stream of pieces, even when a tag is split across pieces."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._buffer = ""
        self._inside = False
        self._started = False

    def feed(self, piece: str) -> str:
        self._buffer += piece
        out: list[str] = []
        while self._buffer:
            tag = self.CLOSE if self._inside else self.OPEN
            at = self._buffer.find(tag)
            if at >= 0:
                if not self._inside:
                    out.append(self._buffer[:at])
                self._buffer = self._buffer[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_suffix(self._buffer, tag)
            if not self._inside:
                out.append(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            break
        text = "".join(out)
        if not self._started:  # the model's answer starts after the reasoning: trim the gap
            text = text.lstrip()
            self._started = bool(text)
        return text

    def flush(self) -> str:
        rest, self._buffer = ("" if self._inside else self._buffer), ""
        return rest


def _partial_suffix(text: str, tag: str) -> int:
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


def pieces(text: str, size: int = 24) -> Iterator[str]:
    """A finished text in word-aligned pieces, for streaming an extractive answer."""
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        while end < len(text) and not text[end].isspace():
            end += 1
        yield text[start:end]
        start = end
