"""Chat completions objects: `chat.completion`, and the `chat.completion.chunk` event stream.

Stream: a first chunk with the assistant role, one chunk per text piece, a final chunk with
`finish_reason` that also carries the hub's `sources` (and `generator`, `warning`) as extra
top-level fields, a usage chunk (`choices: []`) when `stream_options.include_usage` is set, then
`data: [DONE]`. Tool calls stream as OpenAI's do (`delta.tool_calls` pieces, then
`finish_reason: tool_calls`). The sources ride on the final chunk rather than a chunk of their own because
clients that read `choices[0]` of every chunk (as many do) break on an extra choiceless chunk.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from rag_api.answering.frames import DONE, frame
from rag_api.openai_compat.reply import Reply


def completion(reply: Reply) -> dict[str, Any]:
    """The whole answer as a `chat.completion` object (with `tool_calls` when the LLM called)."""
    text = reply.text()
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if reply.tool_calls:
        message |= {"content": text or None, "tool_calls": reply.tool_calls}
    choice = {"index": 0, "message": message, "logprobs": None}
    return {
        **_head(reply, "chat.completion"),
        "choices": [{**choice, "finish_reason": reply.finish_reason}],
        "usage": reply.stream.usage.as_dict(),
        **reply.extra(),
    }


def completion_chunks(reply: Reply, include_usage: bool) -> Iterator[str]:
    """The answer as SSE `chat.completion.chunk` events, as it is generated."""
    head = _head(reply, "chat.completion.chunk")
    usage: dict[str, Any] = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return frame({**head, "choices": [choice], **usage, **extra})

    yield chunk({"role": "assistant", "content": ""})
    for piece in reply.pieces():
        if isinstance(piece, str):
            yield chunk({"content": piece})
        else:  # as OpenAI streams a call: id and name first, then pieces of the arguments
            yield chunk({"tool_calls": [piece.as_delta()]})
    yield chunk({}, reply.finish_reason, **reply.extra())
    if include_usage:
        yield frame({**head, "choices": [], "usage": reply.stream.usage.as_dict()})
    yield DONE


def _head(reply: Reply, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": reply.model,
        "system_fingerprint": None,
    }
