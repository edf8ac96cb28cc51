"""From OpenAI messages (chat) or input items (Responses) to one conversation: question, history, system.

Contents are flattened recursively — strings, lists of content parts, dicts nesting either — because
clients such as AnythingLLM send `[{"type": "input_text", "text": ...}]` where a string would do.
Parts that carry no text (images, audio, files) are skipped; an unknown part type is an error that
names where it is (e.g. `messages[2].content[0].type`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_api.errors import InvalidRequest
from rag_api.llm.generators import Messages
from rag_api.openai_compat.functions import tool_call
from rag_api.openai_compat.models import ChatMessage

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
SILENT_PARTS = frozenset(
    {"image_url", "input_image", "input_audio", "file", "input_file", "refusal"}
)
INPUT_ROLES = frozenset({"user", "assistant", "system", "developer"})
ITEM_TYPES = frozenset({"message", "function_call_output"})
Turn = tuple[str, str]  # (role, text)


@dataclass(frozen=True)
class Conversation:
    """The last user message (the question), the user/assistant turns before it, and the system text."""

    question: str
    history: Messages
    system: str | None
    # a tool exchange after the question (assistant tool calls, role: tool results), in OpenAI's
    # form: it follows the question to the LLM; retrieval stays on the question
    after: Messages = field(default_factory=list)

    def messages(self) -> Messages:
        """The conversation as chat messages, as the client sent it (its system text first)."""
        system = [{"role": "system", "content": self.system}] if self.system else []
        return [*system, *self.history, {"role": "user", "content": self.question}, *self.after]

    def previous_question(self) -> str | None:
        """The user message before the question, if any."""
        users = [m["content"] for m in self.history if m["role"] == "user"]
        return users[-1] if users else None


def flatten(value: Any, where: str) -> str:
    """The text of a message content: a string, content parts, or lists and dicts nesting them."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = (flatten(item, f"{where}[{i}]") for i, item in enumerate(value))
        return "\n".join(text for text in texts if text)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind in SILENT_PARTS:
            return ""
        if kind is not None and kind not in TEXT_PARTS:
            allowed = ", ".join(sorted(TEXT_PARTS | SILENT_PARTS))
            raise InvalidRequest(
                f"{where}.type: unsupported content part type {kind!r} (supported: {allowed})",
                param=f"{where}.type",
            )
        for key in ("text", "content"):
            if key in value:
                return flatten(value[key], f"{where}.{key}")
        raise InvalidRequest(f"{where}: a text part needs a 'text' field", param=where)
    raise InvalidRequest(
        f"{where}: expected text or content parts, got {type(value).__name__}", param=where
    )


def from_chat(
    messages: Sequence[ChatMessage], system: str | None = None, param: str = "messages"
) -> Conversation:
    """The conversation in chat `messages` (after the `system` text, if any)."""
    turns = [(m.role, flatten(m.content, f"{param}[{i}].content")) for i, m in enumerate(messages)]
    conversation = _conversation(turns, [system or ""], param)
    last_user = max(i for i, (role, text) in enumerate(turns) if role == "user" and text.strip())
    later = messages[last_user + 1 :]
    if not any(m.role == "tool" or m.tool_calls for m in later):
        return conversation
    after: Messages = []
    for m, (role, text) in zip(later, turns[last_user + 1 :], strict=True):
        if role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if m.tool_calls:
                message["tool_calls"] = m.tool_calls
            after.append(message)
        elif role == "tool":
            after.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": text})
    return replace(conversation, after=after)


def from_responses(
    items: str | list[Any], instructions: str | None, earlier: Sequence[Any] = ()
) -> Conversation:
    """The conversation in a Responses request's `input` (and `instructions`), continuing the
    `earlier` items (a stored response's input and output: `previous_response_id`)."""
    messages = [*input_messages(earlier, "previous_response_id"), *input_messages(items, "input")]
    return from_chat(messages, instructions, "input")


def input_items(items: str | Sequence[Any]) -> list[Any]:
    """Responses `input` as a list of items (a string is one user message)."""
    return [{"role": "user", "content": items}] if isinstance(items, str) else list(items)


def input_messages(items: str | Sequence[Any], param: str) -> Iterator[ChatMessage]:
    """Responses input items as chat messages, their contents flattened (errors name
    `{param}[i]`): messages keep their role; `function_call` items (consecutive ones together)
    become an assistant's tool_calls, `function_call_output` items `role: tool` results; content
    parts sent without a message around them make one user message."""
    loose: list[str] = []
    calls: list[dict[str, Any]] = []

    def pending() -> Iterator[ChatMessage]:
        if loose:
            yield ChatMessage(role="user", content="\n".join(loose))
            loose.clear()
        if calls:
            yield ChatMessage(role="assistant", tool_calls=list(calls))
            calls.clear()

    for i, item in enumerate(input_items(items)):
        where = f"{param}[{i}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            if loose:
                yield from pending()
            calls.append(tool_call(item, where))
            continue
        if not (isinstance(item, dict) and ("role" in item or kind in ITEM_TYPES)):
            if calls:
                yield from pending()
            loose.append(flatten(item, where))
            continue
        yield from pending()
        if kind == "function_call_output":
            output = flatten(item.get("output"), f"{where}.output")
            yield ChatMessage(role="tool", tool_call_id=item.get("call_id") or "", content=output)
            continue
        role = item.get("role")
        if role not in INPUT_ROLES:
            raise InvalidRequest(
                f"{where}.role: must be one of {', '.join(sorted(INPUT_ROLES))}, got {role!r}",
                param=f"{where}.role",
            )
        yield ChatMessage(role=role, content=flatten(item.get("content"), f"{where}.content"))
    yield from pending()


def _conversation(turns: Iterable[Turn], system: list[str], param: str) -> Conversation:
    turns = list(turns)
    system = [text.strip() for text in system]
    system += [text.strip() for role, text in turns if role in ("system", "developer")]
    # tool results before the question are dropped (the ones after it: `from_chat`)
    dialogue = [(role, text.strip()) for role, text in turns if role in ("user", "assistant")]
    dialogue = [(role, text) for role, text in dialogue if text]
    users = [i for i, (role, _) in enumerate(dialogue) if role == "user"]
    if not users:
        raise InvalidRequest(f"{param}: there is no user message with text to answer", param=param)
    history = [{"role": role, "content": text} for role, text in dialogue[: users[-1]]]
    return Conversation(dialogue[users[-1]][1], history, "\n\n".join(filter(None, system)) or None)
