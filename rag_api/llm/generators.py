"""Answer generation: Ollama, any OpenAI-compatible server, or extractive (no LLM), always streamable."""

from __future__ import annotations

import json
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rag_api.config import LLMConfig, LLMTimeouts
from rag_api.errors import LLMUnavailable
from rag_api.llm.breaker import CircuitBreaker
from rag_api.providers import LLMS
from rag_api.redact import redact
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


class OllamaGenerator(Generator):
    """Ollama's /api/chat: tools and `format` (JSON or a JSON schema); it has no tool_choice, so a
    forced tool call is refused before it is called (rag_api.openai_compat.reply)."""

    name = "ollama"
    structured = True

    def __init__(self, model: str, base_url: str, timeouts: LLMTimeouts) -> None:
        import ollama

        self.model = model
        self.base_url = base_url
        self._client = ollama.Client(host=base_url, timeout=http_timeout(timeouts))

    def stream(
        self, messages: Messages, generation: Generation, temperature: float, max_tokens: int | None
    ) -> Iterator[Piece]:
        options: dict[str, Any] = {"temperature": temperature}
        if max_tokens:
            options["num_predict"] = max_tokens
        asked = generation.options
        options |= asked.fields()  # Ollama's names are OpenAI's for these
        extra: dict[str, Any] = {}
        if asked.offers_tools:
            extra["tools"] = list(asked.tools)
        if asked.response_format is not None:
            extra["format"] = ollama_format(asked.response_format)
        try:
            chunks = self._client.chat(
                model=self.model,
                messages=ollama_messages(messages),
                stream=True,
                options=options,
                **extra,
            )
            first = next(chunks, None)
        except Exception as exc:
            raise LLMUnavailable(f"Ollama at {self.base_url} ({self.model})", str(exc)) from exc
        calls = 0
        try:
            chunk = first
            while chunk is not None:
                if chunk.message and chunk.message.content:
                    yield chunk.message.content
                for call in (chunk.message.tool_calls if chunk.message else None) or ():
                    # Ollama sends each call whole, without an id: one OpenAI piece per call
                    arguments = json.dumps(dict(call.function.arguments), ensure_ascii=False)
                    yield ToolCallDelta(calls, call_id(), call.function.name, arguments)
                    calls += 1
                if chunk.done:
                    generation.usage = Usage(chunk.prompt_eval_count or 0, chunk.eval_count or 0)
                    generation.finish_reason = "length" if chunk.done_reason == "length" else "stop"
                    if calls:
                        generation.finish_reason = "tool_calls"
                chunk = _next(chunks, f"Ollama at {self.base_url} ({self.model})")
        finally:
            chunks.close()  # a client that went away stops the upstream generation


class OpenAIGenerator(Generator):
    """An OpenAI-compatible server: tools, tool_choice and response_format forwarded as sent, its
    `delta.tool_calls` pieces passed back unchanged."""

    name = "openai"
    structured = True
    forces_tools = True

    def __init__(
        self, model: str, base_url: str, api_key: str | None, timeouts: LLMTimeouts
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=http_timeout(timeouts),
            max_retries=0,
        )

    def stream(
        self, messages: Messages, generation: Generation, temperature: float, max_tokens: int | None
    ) -> Iterator[Piece]:
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                max_tokens=max_tokens,
                stream=True,
                stream_options={"include_usage": True},
                **generation.options.fields(),
                **openai_structured(generation.options),
            )
            iterator = iter(response)
            first = next(iterator, None)
        except Exception as exc:
            raise LLMUnavailable(
                f"OpenAI-compatible server at {self.base_url} ({self.model})", str(exc)
            ) from exc
        try:
            chunk = first
            while chunk is not None:
                if chunk.usage is not None:
                    generation.usage = Usage(
                        chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                    )
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        yield choice.delta.content
                    for call in (choice.delta.tool_calls if choice.delta else None) or ():
                        function = call.function
                        yield ToolCallDelta(
                            call.index,
                            call.id,
                            function.name if function else None,
                            (function.arguments if function else None) or "",
                        )
                    if choice.finish_reason:
                        generation.finish_reason = choice.finish_reason
                chunk = _next(
                    iterator, f"OpenAI-compatible server at {self.base_url} ({self.model})"
                )
        finally:
            response.close()


def call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def openai_structured(options: Options) -> dict[str, Any]:
    """The request fields of tools and structured output, for an OpenAI-compatible server."""
    fields: dict[str, Any] = {}
    if options.tools:
        fields["tools"] = list(options.tools)
        if options.tool_choice is not None:
            fields["tool_choice"] = options.tool_choice
        if options.parallel_tool_calls is not None:
            fields["parallel_tool_calls"] = options.parallel_tool_calls
    if options.response_format is not None:
        fields["response_format"] = options.response_format
    return fields


def ollama_format(response_format: dict[str, Any]) -> Any:
    """OpenAI's response_format as Ollama's `format`: "json", or the JSON schema itself."""
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema") or "json"
    return "json"


def ollama_messages(messages: Messages) -> Messages:
    """OpenAI chat messages as Ollama takes them: a tool call's arguments as an object, not a JSON
    string; a tool result named by the function of the call it answers."""
    names: dict[str, str] = {}
    converted: Messages = []
    for message in messages:
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id") or "", "")
            converted.append(
                {"role": "tool", "content": message.get("content") or "", "tool_name": name}
            )
            continue
        calls = message.get("tool_calls")
        if not calls:
            converted.append(message)
            continue
        ollama_calls = []
        for call in calls:
            function = call.get("function") or {}
            names[call.get("id") or ""] = function.get("name", "")
            arguments = function.get("arguments") or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                parsed = {"arguments": arguments}
            if not isinstance(parsed, dict):
                parsed = {"value": parsed}
            ollama_calls.append(
                {"function": {"name": function.get("name", ""), "arguments": parsed}}
            )
        converted.append(
            {
                "role": "assistant",
                "content": message.get("content") or "",
                "tool_calls": ollama_calls,
            }
        )
    return converted


def http_timeout(timeouts: LLMTimeouts) -> Any:
    """The HTTP client's bounds: `connect` to connect, `first_token` for every other wait (the
    response head, the first piece, any silence between pieces); `total` is enforced per piece."""
    import httpx

    return httpx.Timeout(timeouts.first_token, connect=timeouts.connect)


def _next(iterator: Iterator[Any], upstream: str) -> Any:
    try:
        return next(iterator, None)
    except Exception as exc:  # the connection broke mid-answer
        raise LLMUnavailable(upstream, str(exc)) from exc


class GeneratorRouter:
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
