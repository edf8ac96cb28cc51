"""Client task prompts: requests that are not questions to the knowledge base.

Open WebUI sends, after each answer, its own background tasks to the chat's model (unless a "Task
Model" is set): a title, tags, follow-up suggestions and search queries. Each is one user message
made from its default template (backend/open_webui/config.py, DEFAULT_*_PROMPT_TEMPLATE; samples in
tests/data/openwebui_task_prompts.json): it starts with `### Task:`, asks for a JSON object with a
known key (`{ "title": ...`, `{ "tags": ...`, `{ "follow_ups": ...`, `{ "queries": ...`) and quotes
the chat in `<chat_history>` as `USER: ...` / `ASSISTANT: ...` lines. Such a prompt skips
retrieval: the collection's LLM answers it as sent, and without an LLM `minimal_answer` gives the
JSON asked for (the first user message as the title, empty lists for the others).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

TASK_KEYS = ("title", "tags", "follow_ups", "queries")
_HISTORY = re.compile(r"<chat_history>(.*?)</chat_history>", re.DOTALL)
_ASKED_KEY = re.compile(r'\{\s*"(' + "|".join(TASK_KEYS) + r')"\s*:')
_USER_LINE = re.compile(r"^USER:\s*(.+)$", re.MULTILINE)
TITLE_CHARS = 50  # a chat list shows about this much of a title
_CLOSERS = "?!"


@dataclass(frozen=True)
class TaskPrompt:
    key: str  # the JSON key the prompt asks for: one of TASK_KEYS
    history: str  # the chat it quotes

    def minimal_answer(self) -> str:
        """The JSON the prompt asks for, made without an LLM."""
        if self.key != "title":
            return json.dumps({self.key: []})
        first = _USER_LINE.search(self.history)
        title = short_title(first.group(1) if first else self.history) or "Chat"
        return json.dumps({"title": title}, ensure_ascii=False)


def short_title(question: str, limit: int = TITLE_CHARS) -> str:
    """The question itself as a title; a longer one cut at the last word boundary within `limit`
    characters, marked with "…" and ending with the question's own "?" or "!", so a Spanish
    "¿…?" or "¡…!" pair stays whole."""
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    closer = text[-1] if text[-1] in _CLOSERS else ""
    room = limit - 1 - len(closer)
    cut = text[: room + 1].rsplit(" ", 1)[0] if " " in text[:room] else text[:room]
    return cut.rstrip(" ,;:.-–—") + "…" + closer


def task_prompt(text: str) -> TaskPrompt | None:
    """The task `text` asks for, if it is one of the recognised client task prompts."""
    if not text.lstrip().startswith("### Task:"):
        return None
    history = _HISTORY.search(text)
    if history is None:
        return None
    asked = _ASKED_KEY.search(text, 0, history.start())  # the chat itself may hold any JSON
    return TaskPrompt(asked.group(1), history.group(1).strip()) if asked else None
