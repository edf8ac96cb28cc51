"""Server-sent events as text: one event's frame, and the end of an OpenAI stream. The HTTP
response that streams them is rag_api.http.sse."""

from __future__ import annotations

import json
from typing import Any

DONE = "data: [DONE]\n\n"


def frame(data: dict[str, Any], event: str | None = None) -> str:
    """One SSE event: an optional `event:` line, then the JSON on one `data:` line."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
