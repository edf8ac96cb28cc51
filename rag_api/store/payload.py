"""Point ids and payload reading, including payloads written by other tools (LlamaIndex, LangChain)."""

from __future__ import annotations

import json
import uuid
from typing import Any

_NAMESPACE = uuid.UUID("6f1b2c9e-3a4d-5e6f-8a9b-0c1d2e3f4a5b")
TEXT_KEYS = ("text", "page_content", "content", "document")
SOURCE_KEYS = ("source", "file_path", "file_name", "ref_doc_id", "doc_id")


def point_id(collection: str, source: str, chunk_index: int) -> str:
    """Deterministic id of a chunk: re-indexing the same chunk overwrites instead of duplicating."""
    return str(uuid.uuid5(_NAMESPACE, f"{collection}\x00{source}\x00{chunk_index}"))


def extract_text(payload: dict[str, Any] | None) -> str:
    """The chunk text: `text`, then LlamaIndex's `_node_content` JSON, then other common keys."""
    if not payload:
        return ""
    text = payload.get("text")
    if isinstance(text, str) and text:
        return text
    node = payload.get("_node_content")
    if isinstance(node, str):
        try:
            node = json.loads(node)
        except ValueError:
            node = None
    if isinstance(node, dict) and isinstance(node.get("text"), str) and node["text"]:
        return node["text"]
    for key in TEXT_KEYS[1:]:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def extract_source(payload: dict[str, Any] | None) -> str:
    """The document a chunk belongs to, under the hub's or a foreign tool's key."""
    for key in SOURCE_KEYS:
        value = (payload or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return ""
