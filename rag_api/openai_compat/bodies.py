"""Request bodies of /v1/chat/completions and /v1/responses: the OpenAI fields the hub uses.

Clients send many more OpenAI options (top_p, tools, user, store, ...); they are accepted and
ignored, so AnythingLLM, Open WebUI and the SDKs work unchanged. Message contents are checked
and flattened by `conversation`, which names the exact part that is wrong.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ModelName = Annotated[str, Field(min_length=1, max_length=256)]
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TokenLimit = Annotated[int, Field(gt=0)]


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StreamOptions(Lenient):
    include_usage: bool = False


class ChatMessage(Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Any = None

    @field_validator("content")
    @classmethod
    def _text_or_parts(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str | list):
            raise ValueError("must be a string or a list of content parts")
        return value


class ChatRequest(Lenient):
    model: ModelName
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    temperature: Temperature | None = None
    max_tokens: TokenLimit | None = None
    max_completion_tokens: TokenLimit | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: Annotated[int, Field(ge=1, le=1)] | None = None  # one answer per request

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class ResponsesRequest(Lenient):
    model: ModelName
    input: Any = Field(...)
    instructions: str | None = None
    stream: bool | None = False
    temperature: Temperature | None = None
    max_output_tokens: TokenLimit | None = None
    metadata: dict[str, str] | None = None
    previous_response_id: str | None = None

    @field_validator("input")
    @classmethod
    def _text_or_items(cls, value: Any) -> Any:
        if not isinstance(value, str | list):
            raise ValueError("must be a string or a list of messages")
        return value

    @field_validator("previous_response_id")
    @classmethod
    def _stateless(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError(
                "is not supported: the hub keeps no responses; send the conversation in input"
            )
