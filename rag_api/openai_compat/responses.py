"""Responses API objects: the `response` object, and its SSE event sequence.

Stream: response.created, response.in_progress, then per output item: response.output_item.added,
for a message response.content_part.added, response.output_text.delta (one per piece),
response.output_text.done, response.content_part.done; for a function call
response.function_call_arguments.delta (one per piece), response.function_call_arguments.done;
then response.output_item.done; finally response.completed (or response.incomplete when the token
limit cut the answer), each with a `sequence_number` from 0. An item is done when the next one
starts or the answer ends. The final response object carries the hub's `sources` (and
`generator`, `warning`) as extra fields; a stored response is kept when it is final.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from rag_api.answering.frames import frame
from rag_api.llm.generators import ToolCallDelta, Usage
from rag_api.openai_compat.models import ResponsesRequest
from rag_api.openai_compat.reply import Reply

Event = tuple[str, dict[str, Any]]  # (type, fields)
Keep = Callable[[dict[str, Any]], None]  # keeps the final response (rag_api.openai_compat.stored)


class ResponseDraft:
    """The ids, timestamps and echoed request fields of one response, and its output items."""

    def __init__(self, reply: Reply, request: ResponsesRequest, keep: Keep | None = None) -> None:
        self.reply = reply
        self.request = request
        self.keep = keep
        self.id = f"resp_{uuid.uuid4().hex}"
        self.created_at = int(time.time())
        self.output: list[dict[str, Any]] = []  # the items done so far

    @property
    def status(self) -> str:
        return "incomplete" if self.reply.finish_reason == "length" else "completed"

    def response(self, finished: bool = False) -> dict[str, Any]:
        """The response object: in progress (no output yet) or finished."""
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
            "output": list(self.output) if finished else [],
            "parallel_tool_calls": request.parallel_tool_calls is not False,
            "previous_response_id": request.previous_response_id,
            "reasoning": None,
            "store": self.keep is not None,
            "temperature": request.temperature,
            "text": {"format": (request.text or {}).get("format") or {"type": "text"}},
            "tool_choice": request.tool_choice or "auto",
            "tools": request.tools or [],
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

    def finish(self) -> dict[str, Any]:
        """The finished response object, kept when the request asked to store it."""
        body = self.response(finished=True)
        if self.keep is not None:
            self.keep(body)
        return body


class OutputItems:
    """The answer's pieces as output items: a message while text comes, a `function_call` item per
    tool call; the events that open, fill and close them."""

    def __init__(self, draft: ResponseDraft) -> None:
        self.draft = draft
        self.item: dict[str, Any] | None = None  # the open item
        self.call_index: int | None = None  # the open call's, as the generator numbers them
        self.parts: list[str] = []  # the open message's text

    @property
    def where(self) -> dict[str, Any]:
        assert self.item is not None
        return {"item_id": self.item["id"], "output_index": len(self.draft.output)}

    def text(self, piece: str) -> Iterator[Event]:
        if self.item is None or self.item["type"] != "message":
            yield from self.close()
            yield from self._open(message(f"msg_{uuid.uuid4().hex}", None, "in_progress"))
            yield (
                "response.content_part.added",
                {**self.where, "content_index": 0, "part": output_text("")},
            )
        self.parts.append(piece)
        yield (
            "response.output_text.delta",
            {**self.where, "content_index": 0, "delta": piece, "logprobs": []},
        )

    def call(self, piece: ToolCallDelta) -> Iterator[Event]:
        if self.item is None or self.call_index != piece.index:
            yield from self.close()
            self.call_index = piece.index
            item = {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex}",
                "call_id": piece.id or "",
                "name": piece.name or "",
                "arguments": "",
                "status": "in_progress",
            }
            yield from self._open(item)
        assert self.item is not None
        self.item["arguments"] += piece.arguments
        if piece.arguments:
            yield "response.function_call_arguments.delta", {**self.where, "delta": piece.arguments}

    def close(self) -> Iterator[Event]:
        """Finish the open item, if any."""
        if self.item is None:
            return
        item, where = self.item, self.where
        if item["type"] == "message":
            text = "".join(self.parts)
            yield (
                "response.output_text.done",
                {**where, "content_index": 0, "text": text, "logprobs": []},
            )
            yield (
                "response.content_part.done",
                {**where, "content_index": 0, "part": output_text(text)},
            )
            item = message(item["id"], text, self.draft.status)
        else:
            item = {**item, "status": "completed"}
            done = {"arguments": item["arguments"], "name": item["name"]}
            yield "response.function_call_arguments.done", {**where, **done}
        yield "response.output_item.done", {"output_index": where["output_index"], "item": item}
        self.draft.output.append(item)
        self.item, self.call_index, self.parts = None, None, []

    def end(self) -> Iterator[Event]:
        """Close the last item; an answer with no output at all still gets its (empty) message."""
        if self.item is None and not self.draft.output:
            yield from self.text("")
        yield from self.close()

    def _open(self, item: dict[str, Any]) -> Iterator[Event]:
        self.item = item
        yield "response.output_item.added", {"output_index": len(self.draft.output), "item": item}


def message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    """An assistant message item: in progress and empty (`text` None), or finished."""
    return {
        "type": "message",
        "id": item_id,
        "status": status,
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


def _events(draft: ResponseDraft) -> Iterator[Event]:
    yield "response.created", {"response": draft.response()}
    yield "response.in_progress", {"response": draft.response()}
    items = OutputItems(draft)
    for piece in draft.reply.pieces():
        yield from items.text(piece) if isinstance(piece, str) else items.call(piece)
    yield from items.end()
    final = "response.completed" if draft.status == "completed" else "response.incomplete"
    yield final, {"response": draft.finish()}


def response(reply: Reply, request: ResponsesRequest, keep: Keep | None = None) -> dict[str, Any]:
    """The whole answer as a finished `response` object."""
    *_, (_, last) = _events(ResponseDraft(reply, request, keep))
    return last["response"]


def response_events(
    reply: Reply, request: ResponsesRequest, keep: Keep | None = None
) -> Iterator[str]:
    """The answer as the Responses SSE event sequence, as it is generated."""
    numbers = itertools.count()
    for kind, fields in _events(ResponseDraft(reply, request, keep)):
        yield frame({"type": kind, **fields, "sequence_number": next(numbers)}, event=kind)
