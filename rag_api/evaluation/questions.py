"""The question file a user writes by hand: one question a line, the sources that answer it.

JSONL: `{"question": "...", "sources": ["manual/caja.md"], "answer": "optional expected text"}`
(`source` for a single one; `chunk` for the text of the expected chunk). CSV: a header with
`question`, `sources` (several separated by `|`), and optionally `answer`, `chunk`.

Relevance: by source, or by chunk when `answer` or `chunk` text is given (a passage is right when
it holds that text, and comes from one of the sources when they are named). A question with no
sources and no text is out of scope: the right answer is "no relevant information".
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_api.config import HubConfig
from rag_api.errors import InvalidRequest

MAX_QUESTIONS = 5000
MAX_TEXT = 8000  # a query's own limit (rag_api.answering.query.SearchFields)
FIELDS = {"question", "sources", "source", "answer", "chunk", "id"}


@dataclass(frozen=True)
class Question:
    text: str
    sources: tuple[str, ...] = ()
    answer: str | None = None  # the passage must contain it
    chunk: str | None = None  # the expected chunk's text: the passage must overlap it
    id: str = ""

    @property
    def in_scope(self) -> bool:
        """Whether the collection should answer it at all."""
        return bool(self.sources or self.answer or self.chunk)

    def holds(self, source: str, text: str) -> bool:
        """Whether a passage of `source` with `text` is a right one (by chunk when text is given)."""
        if self.sources and source not in self.sources:
            return False
        if self.answer is None and self.chunk is None:
            return True
        passage = normalise(text)
        if self.answer is not None and normalise(self.answer) in passage:
            return True
        if self.chunk is not None:
            expected = normalise(self.chunk)
            return expected in passage or passage in expected
        return False

    @property
    def by_chunk(self) -> bool:
        return self.answer is not None or self.chunk is not None

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"question": self.text, "sources": list(self.sources)}
        if self.answer is not None:
            row["answer"] = self.answer
        if self.chunk is not None:
            row["chunk"] = self.chunk
        return row


def configured_file(config: HubConfig, name: str) -> Path | None:
    """The collection's `eval:` question file, a relative path read from collections.yaml's folder."""
    path = config.collection(name).eval
    if path is None or path.is_absolute() or config.path is None:
        return path
    return config.path.parent / path


def normalise(text: str) -> str:
    """Case and whitespace folded: a copied answer matches across line breaks and capitals."""
    return " ".join(text.split()).casefold()


def load_questions(path: Path) -> list[Question]:
    """The questions of a .jsonl or .csv file; a bad line is an error naming file and line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InvalidRequest(f"{path}: question file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"{path}: cannot read the question file ({exc})") from None
    if path.suffix.lower() in (".csv", ".tsv"):
        return parse_rows(_csv_rows(text, path), str(path))
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"{path}: line {number}: not JSON ({exc.msg})") from None
    return parse_rows(rows, str(path))


def parse_rows(rows: list[tuple[int, Any]], where: str) -> list[Question]:
    """Questions from (line number, object) pairs: the file's lines or an HTTP body's items."""
    if not rows:
        raise InvalidRequest(f"{where}: no questions")
    if len(rows) > MAX_QUESTIONS:
        raise InvalidRequest(f"{where}: {len(rows)} questions, at most {MAX_QUESTIONS}")
    return [_question(row, f"{where}: line {number}") for number, row in rows]


def _question(row: Any, where: str) -> Question:
    if not isinstance(row, dict):
        raise InvalidRequest(f"{where}: expected an object with 'question' and 'sources'")
    if unknown := sorted(set(row) - FIELDS):
        raise InvalidRequest(f"{where}: unknown field(s) {', '.join(unknown)}")
    text = _text(row.get("question"), where, "question")
    if text is None:
        raise InvalidRequest(f"{where}: 'question' is missing or empty")
    sources = row.get("sources", [])
    if "source" in row:
        sources = [row["source"], *(sources or [])]
    if isinstance(sources, str):
        sources = [s for s in re.split(r"\s*\|\s*", sources) if s]
    if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
        raise InvalidRequest(f"{where}: 'sources' must be a list of source names")
    return Question(
        text=text,
        sources=tuple(dict.fromkeys(sources)),
        answer=_text(row.get("answer"), where, "answer"),
        chunk=_text(row.get("chunk"), where, "chunk"),
        id=str(row.get("id") or where.rpartition("line ")[2]),
    )


def _text(value: Any, where: str, field: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"{where}: '{field}' must be text")
    if len(value) > MAX_TEXT:
        raise InvalidRequest(f"{where}: '{field}' is longer than {MAX_TEXT} characters")
    return value.strip()


def _csv_rows(text: str, path: Path) -> list[tuple[int, Any]]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    if reader.fieldnames is None or "question" not in reader.fieldnames:
        raise InvalidRequest(f"{path}: the CSV header must name a 'question' column")
    return [
        (reader.line_num, {k: v for k, v in row.items() if k is not None and v not in (None, "")})
        for row in reader
    ]


def dump_questions(questions: list[Question]) -> str:
    """JSONL, one question a line (what --generate writes)."""
    return "".join(json.dumps(q.as_dict(), ensure_ascii=False) + "\n" for q in questions)
