"""A tiny collection where only the exact terms tell the documents apart: twelve error codes
described in the same words. BM25 finds a code; an embedding of the code barely can."""

from __future__ import annotations

import json
from pathlib import Path

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection

# codes made of the same digits: an embedding can hardly tell E4471 from E4417
CODES = [
    (1447, "paper tray"),
    (1474, "network card"),
    (1744, "label printer"),
    (4147, "cash drawer"),
    (4174, "barcode scanner"),
    (4417, "receipt printer"),
    (4471, "card reader"),
    (4714, "touch screen"),
    (4741, "scale"),
    (7144, "customer display"),
    (7414, "kitchen printer"),
    (7441, "battery"),
    (2589, "fan"),
    (2598, "keyboard"),
    (2859, "power supply"),
    (2895, "modem"),
    (2958, "router"),
    (2985, "speaker"),
    (5289, "camera"),
    (5298, "badge reader"),
    (5829, "ticket printer"),
    (5892, "coin counter"),
    (5928, "safe lock"),
    (5982, "door sensor"),
]


def write_codes_kb(folder: Path) -> Path:
    """One .jsonl line per code: the same sentence, only the code and the part differ."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "text": f"Error E{code}: the {part} stopped answering. Switch the {part} off, wait "
            f"ten seconds and switch it on again; call support if error E{code} comes back.",
            "source": f"errors/E{code}",
            "chunk_index": 0,
        }
        for code, part in CODES
    ]
    (folder / "errors.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def code_questions(count: int = len(CODES)) -> list[dict]:
    return [
        {"question": f"What does E{code} mean?", "sources": [f"errors/E{code}"]}
        for code, _ in CODES[:count]
    ]


def index(hub: Hub, name: str) -> None:
    sync_collection(hub.collection(name), max_bytes=hub.settings.max_file_bytes)
