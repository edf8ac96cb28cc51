"""Request bodies of /v1/chat/completions and /v1/responses: the OpenAI fields the hub uses.

Three kinds of fields (docs/openai.md lists them all):
- honoured by the hub: model, messages / input / instructions, stream, stream_options, and on
  Responses store and previous_response_id; and the hub's own `filters` (as /query takes them,
  sent with the SDKs' `extra_body`);
- forwarded to the LLM as sent: temperature, top_p, the token limit, stop, seed, the penalties,
  tools / tool_choice / parallel_tool_calls and response_format / text.format (`options()`);
- refused with a 400 naming the field, because the hub cannot do what they ask and an answer
  without it would look like one with it: `n` > 1, logprobs, audio or image output.
Anything else (user, metadata, service_tier, ...) is accepted and ignored, so AnythingLLM, Open
WebUI and the SDKs work unchanged. Message contents are checked and flattened by
`conversation`, which names the exact part that is wrong.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from rag_api.answering.models import Filters, RoutingBlock, Source, Usage
from rag_api.llm.generators import Options
from rag_api.openai_compat.functions import chat_tool_choice, chat_tools
from rag_api.schema import Answer, Body

ModelName = Annotated[str, Field(min_length=1, max_length=256)]
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TopP = Annotated[float, Field(ge=0.0, le=1.0)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
TokenLimit = Annotated[int, Field(gt=0)]
Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
NO_LOGPROBS = "is not supported: the hub's answers carry no token log probabilities"


def _refused(reason: str) -> Any:
    """A field validator that refuses any value but the ones that ask for nothing."""

    def check(cls: type, value: Any) -> Any:
        if value not in (None, False, 0, [], {}):
            raise ValueError(reason)
        return value

    return classmethod(check)


class Lenient(Body):
    model_config = ConfigDict(extra="ignore")


class StreamOptions(Lenient):
    include_usage: bool = False


class ChatMessage(Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Any = None
    tool_calls: list[dict[str, Any]] | None = None  # an assistant's calls, sent back unchanged
    tool_call_id: str | None = None  # a tool result's call

    @field_validator("content")
    @classmethod
    def _text_or_parts(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str | list):
            raise ValueError("must be a string or a list of content parts")
        return value


class Sampled(Lenient):
    """The sampling fields both APIs share, forwarded to the LLM."""

    temperature: Temperature | None = None
    top_p: TopP | None = None
    top_logprobs: Any = None

    _no_top_logprobs = field_validator("top_logprobs")(_refused(NO_LOGPROBS))


class Tooled(Sampled):
    """Tools and structured output: forwarded to an LLM that takes them (docs/openai.md)."""

    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None

    @field_validator("tool_choice")
    @classmethod
    def _known_choice(cls, value: Any) -> Any:
        if value is None or value in ("auto", "none", "required") or isinstance(value, dict):
            return value
        raise ValueError("must be 'auto', 'none', 'required' or a named tool")


class ChatRequest(Tooled):
    model: ModelName
    filters: Filters | None = None  # the hub's own, as /query takes them (SDKs: extra_body)
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_tokens: TokenLimit | None = None
    max_completion_tokens: TokenLimit | None = None
    stop: str | list[str] | None = None
    seed: Seed | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: int | None = None
    logprobs: bool | None = None
    modalities: list[str] | None = None
    audio: Any = None
    response_format: dict[str, Any] | None = None

    @field_validator("response_format")
    @classmethod
    def _known_format(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type") not in ("text", "json_object", "json_schema"):
            raise ValueError("type must be 'text', 'json_object' or 'json_schema'")
        return value

    _no_logprobs = field_validator("logprobs")(_refused(NO_LOGPROBS))
    _no_audio = field_validator("audio")(
        _refused("is not supported: the hub answers in text only (modalities: ['text'])")
    )

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_sequences(cls, value: Any) -> Any:
        """A string or up to 4 strings (OpenAI's limit), each 1 to 256 characters."""
        if value is None:
            return value
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise ValueError("must be a string or a list of strings")
        if len(items) > 4:
            raise ValueError(f"takes at most 4 sequences, got {len(items)}")
        if not all(0 < len(item) <= 256 for item in items):
            raise ValueError("each sequence must be 1 to 256 characters")
        return value

    @field_validator("n")
    @classmethod
    def _one_answer(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError(f"must be 1, got {value}: the hub gives one answer per request")
        return value

    @field_validator("modalities")
    @classmethod
    def _text_only(cls, value: list[str] | None) -> list[str] | None:
        other = sorted(set(value or ()) - {"text"})
        if other:
            raise ValueError(f"{other} is not supported: the hub answers in text only")
        return value

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def options(self) -> Options:
        """What goes to the LLM besides temperature and the token limit."""
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        return Options(
            top_p=self.top_p,
            stop=stop,
            seed=self.seed,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
            tools=tuple(self.tools or ()),
            tool_choice=self.tool_choice,
            parallel_tool_calls=self.parallel_tool_calls,
            response_format=(
                None
                if self.response_format is None or self.response_format.get("type") == "text"
                else self.response_format
            ),
        )

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class ResponsesRequest(Tooled):
    """Responses: `text.format` goes to the LLM as chat's response_format, function `tools` and
    `tool_choice` in chat form (rag_api.openai_compat.functions); `store` keeps the response for
    `previous_response_id` and GET /v1/responses/{id} (rag_api.openai_compat.stored)."""

    model: ModelName
    filters: Filters | None = None  # the hub's own, as /query takes them (SDKs: extra_body)
    input: Any = Field(...)
    instructions: str | None = None
    stream: bool | None = False
    max_output_tokens: TokenLimit | None = None
    include: list[str] | None = None
    text: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = True
    previous_response_id: str | None = None

    @field_validator("text")
    @classmethod
    def _known_format(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        kind = ((value or {}).get("format") or {}).get("type", "text")
        if kind not in ("text", "json_object", "json_schema"):
            raise ValueError("format.type must be 'text', 'json_object' or 'json_schema'")
        return value

    @property
    def response_format(self) -> dict[str, Any] | None:
        """`text.format` in chat's response_format form (None: plain text)."""
        found = dict((self.text or {}).get("format") or {})
        kind = found.pop("type", "text")
        if kind == "text":
            return None
        if kind == "json_schema":
            return {"type": "json_schema", "json_schema": found}
        return {"type": kind}

    @field_validator("input")
    @classmethod
    def _text_or_items(cls, value: Any) -> Any:
        if not isinstance(value, str | list):
            raise ValueError("must be a string or a list of messages")
        return value

    @field_validator("include")
    @classmethod
    def _no_token_details(cls, value: list[str] | None) -> list[str] | None:
        if any("logprobs" in item for item in value or ()):
            raise ValueError(f"{value} {NO_LOGPROBS}")
        return value

    def options(self) -> Options:
        """What goes to the LLM besides temperature and the token limit; InvalidRequest naming a
        tool that is not a function."""
        return Options(
            top_p=self.top_p,
            tools=chat_tools(self.tools),
            tool_choice=chat_tool_choice(self.tool_choice),
            parallel_tool_calls=self.parallel_tool_calls,
            response_format=self.response_format,
        )


# --- answers: OpenAI's objects, plus the hub's `sources`, `generator`, `warning`


class ModelCard(Answer):
    id: str  # a collection name
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(Answer):
    object: Literal["list"]
    data: list[ModelCard]


class Retrieval(Answer):
    """What was searched for the turn (rag_api.openai_compat.condense)."""

    query: str
    follow_up: Literal["merged", "alone", "none"]  # with the previous question, or not
    why: str


class HubFields(Answer):
    sources: list[Source]
    generator: str | None  # who answered: the LLM provider, or "extractive"
    warning: str | None = None  # present only when something degraded the answer
    routing: RoutingBlock | None = None  # only from `auto`
    retrieval: Retrieval | None = None  # absent when nothing was searched (a task prompt)


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
