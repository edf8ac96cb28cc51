"""Responses API objects: the `response` object, and its SSE event sequence.

Stream: response.created, response.in_progress, response.output_item.added,
response.content_part.added, response.output_text.delta (one per piece), response.output_text.done,
response.content_part.done, response.output_item.done, then response.completed (or
response.incomplete when the token limit cut the answer), each with a `sequence_number` from 0.
The final response object carries the hub's `sources` (and `generator`, `warning`) as extra fields.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from typing import Any

from rag_api.answering.sse import frame
from rag_api.llm.generators import Usage
from rag_api.openai_compat.bodies import ResponsesRequest
from rag_api.openai_compat.reply import Reply


class ResponseDraft:
    """The ids, timestamps and echoed request fields of one response, and its objects."""

    def __init__(self, reply: Reply, request: ResponsesRequest) -> None:
        self.reply = reply
        self.request = request
        self.id = f"resp_{uuid.uuid4().hex}"
        self.item_id = f"msg_{uuid.uuid4().hex}"
        self.created_at = int(time.time())

    @property
    def status(self) -> str:
        return "incomplete" if self.reply.finish_reason == "length" else "completed"

    def response(self, text: str | None = None) -> dict[str, Any]:
        """The response object: in progress (no text yet) or finished with `text`."""
        finished = text is not None
        request = self.request
        body: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status if finished else "in_progress",
            "error": None,
            "incomplete_details": None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": self.reply.model,
            "output": [self.message(text)] if finished else [],
            "parallel_tool_calls": False,
            "previous_response_id": None,
            "reasoning": None,
            "store": False,
            "temperature": request.temperature,
            "text": {"format": (request.text or {}).get("format") or {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": request.top_p,
            "truncation": "disabled",
            "usage": usage(self.reply.stream.usage) if finished else None,
            "user": None,
            "metadata": request.metadata or {},
        }
        if finished:
            if self.status == "incomplete":
                body["incomplete_details"] = {"reason": "max_output_tokens"}
            body |= self.reply.extra()
        return body

    def message(self, text: str | None) -> dict[str, Any]:
        """The assistant message item: in progress and empty, or finished with `text`."""
        return {
            "type": "message",
            "id": self.item_id,
            "status": "in_progress" if text is None else self.status,
            "role": "assistant",
            "content": [] if text is None else [output_text(text)],
        }


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def usage(counts: Usage) -> dict[str, Any]:
    """Token usage in the Responses shape, details objects included."""
    return {
        "input_tokens": counts.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts.prompt_tokens + counts.completion_tokens,
    }


def response(reply: Reply, request: ResponsesRequest) -> dict[str, Any]:
    """The whole answer as a finished `response` object."""
    draft = ResponseDraft(reply, request)
    return draft.response(reply.text())


def response_events(reply: Reply, request: ResponsesRequest) -> Iterator[str]:
    """The answer as the Responses SSE event sequence, as it is generated."""
    draft = ResponseDraft(reply, request)
    numbers = itertools.count()
    where = {"item_id": draft.item_id, "output_index": 0, "content_index": 0}

    def event(kind: str, **fields: Any) -> str:
        return frame({"type": kind, **fields, "sequence_number": next(numbers)}, event=kind)

    yield event("response.created", response=draft.response())
    yield event("response.in_progress", response=draft.response())
    yield event("response.output_item.added", output_index=0, item=draft.message(None))
    yield event("response.content_part.added", **where, part=output_text(""))
    for piece in reply.pieces():
        yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
    text = reply.content
    yield event("response.output_text.done", **where, text=text, logprobs=[])
    yield event("response.content_part.done", **where, part=output_text(text))
    yield event("response.output_item.done", output_index=0, item=draft.message(text))
    final = "response.completed" if draft.status == "completed" else "response.incomplete"
    yield event(final, response=draft.response(text))
