"""The extractive answer's sentence selection before issue 35, verbatim (rag_api/llm/generators.py
at 925fc3e): bench_extractive's baseline."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rag_api.embedding.bm25 import SparseEncoder
from rag_api.llm.prompts import pack

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"^\s*(#{1,6}\s+|[-*+]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^#{1,6}\s")
_SOFT_BREAK = re.compile(r"(?<=\S)\n(?!\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|\n|\|))")


def baseline_answer(
    question: str,
    passages: Sequence[Any],
    language: str,
    encoder: SparseEncoder,
    fallback: bool = False,
    max_passages: int = 3,
) -> str:
    wanted = encoder.terms(question)
    lines = []
    first_overlap = 0
    for n, passage in enumerate(passages[:max_passages], 1):
        text = _SOFT_BREAK.sub(" ", passage.text)
        parts = [s.strip() for s in _SENTENCE.split(text)]
        headings = {i for i, s in enumerate(p for p in parts if len(p) > 1) if _HEADING.match(s)}
        sentences = [_MARKUP.sub("", s).strip() for s in parts if len(s) > 1]
        if not sentences:
            continue
        overlap = [len(encoder.terms(s) & wanted) for s in sentences]
        best = min(range(len(sentences)), key=lambda i: (-overlap[i], i))
        if n == 1:
            first_overlap = overlap[best]
        elif overlap[best] == 0 or overlap[best] * 2 < first_overlap:
            continue
        text = "" if best in headings else sentences[best]
        follow = best + 1
        if best in headings or text.endswith("?"):
            while len(text) < 80 and follow < len(sentences) and follow not in headings:
                text = f"{text} {sentences[follow]}".strip()
                follow += 1
        if not text:
            continue
        lines.append(f"- {text} [{n}]")
    language_pack = pack(language)
    header = language_pack.extractive_fallback if fallback else language_pack.extractive
    return header + "\n" + "\n".join(lines)
