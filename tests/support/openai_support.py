"""Shared by the OpenAI API tests: a small knowledge base, a hub serving it, and an SSE reader."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rag_api.answering.answer import AnswerStream
from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.llm.generators import Piece, Usage
from rag_api.openai_compat.reply import Reply
from rag_api.search.passage import Passage
from rag_api.settings import Settings
from tests.conftest import LiveServer

KB = {
    "billing.md": (
        "# Refunds\n\nYou can ask for a full refund within 30 days of your first payment. "
        "Refunds reach the original card within 10 business days.\n\n"
        "# Plans\n\nThe Business plan costs $15 per member per month billed annually. "
        "Business includes SAML single sign-on.\n"
    ),
    "security.md": (
        "# Encryption\n\nCustomer data stored on disk is encrypted with AES-256. "
        "Data in transit uses TLS 1.3.\n\n"
        "# Audits\n\nAn outside firm runs a penetration test twice a year.\n"
    ),
    "shortcuts.txt": "Press Ctrl+K to jump to any page by typing its name.\n",
}
# a streamed message's events in the Responses API, from the response's creation to its completion
RESPONSE_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
REFUND = "How many days do I have to ask for a refund?"
# a chat tool, and the call a fake upstream answers it with (the `calling` fixture)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "open_ticket",
            "description": "Open a refund ticket",
            "parameters": {
                "type": "object",
                "properties": {"days": {"type": "integer"}},
                "required": ["days"],
            },
        },
    }
]
CALL = {"name": "open_ticket", "arguments": {"days": 30}}


def ask(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


def write_kb(root: Path) -> Path:
    """The small knowledge base in `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in KB.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def index(hub: Hub, *names: str) -> None:
    """Index these collections' kb folders (a restarted embedded store finds them indexed)."""
    for name in names:
        report = sync_collection(hub.collection(name), False)
        assert (report.indexed or report.unchanged) and not report.errors, report.as_dict()


def start_indexed(settings: Settings, *names: str) -> tuple[Hub, LiveServer]:
    """A hub with `names` indexed, served live; the caller stops the server, then closes the hub."""
    hub = Hub.open(settings)
    index(hub, *names)
    return hub, LiveServer(settings, hub).start()


def sse_events(lines: Iterable[str]) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) of each server-sent event; data `[DONE]` stays a string."""
    events: list[tuple[str | None, Any]] = []
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = line.removeprefix("data: ")
            events.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return events


def upstream_hub(
    root: Path, ollama_url: str, relay_url: str, **settings: Any
) -> tuple[Hub, LiveServer]:
    """A hub over the kb above with three collections answered by: `docs` the (fake) Ollama at
    `ollama_url`, `relay` the (fake) OpenAI-compatible server at `relay_url`, `plain` extractive;
    `settings` beside the config and data dir in `root` (qdrant-client's in-memory mode unless
    `qdrant_url` says otherwise: None, the embedded engine). Called again with the same `root`: the
    same hub restarted (its data dir kept)."""
    from tests.conftest import hash_collection, write_config

    kb = write_kb(root / "kb")
    collections = {
        "docs": hash_collection(
            kb, llm={"provider": "ollama", "model": "llama3.2", "base_url": ollama_url}
        ),
        "relay": hash_collection(
            kb, llm={"provider": "openai", "model": "gpt-4o-mini", "base_url": relay_url + "/v1"}
        ),
        "plain": hash_collection(kb),
    }
    config = write_config(root / "collections.yaml", collections)
    engine = {"qdrant_url": ":memory:", **settings}  # qdrant_url None: the embedded engine
    return start_indexed(Settings(config=config, data_dir=root / "data", **engine), *collections)


def written_reply(
    hub: Hub,
    pieces: list[Piece],
    passages: Iterable[Passage] = (),
    finish_reason: str = "stop",
    **fields: Any,
) -> Reply:
    """A Reply of `docs` whose answer stream is `pieces` (as an LLM would stream them: 11 tokens
    in, 4 out), for the chat and Responses objects made from it."""
    stream = AnswerStream(
        list(passages),
        "ollama",
        "llama3",
        usage=Usage(11, 4),
        finish_reason=finish_reason,
        _pieces=iter(pieces),
    )
    return Reply("rag/docs", hub.collection("docs"), lambda: stream, **fields)
