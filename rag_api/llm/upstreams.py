"""The upstream LLM servers: Ollama's /api/chat and any OpenAI-compatible /v1/chat/completions,
streamed, with their wire formats (messages, tools, structured output)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from rag_api.config import LLMTimeouts
from rag_api.errors import LLMUnavailable
from rag_api.llm.generators import (
    Generation,
    Generator,
    Messages,
    Options,
    Piece,
    ToolCallDelta,
    Usage,
)


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
