"""Draft questions from a collection's own chunks, for a user who has no question file yet.

Extractive and deterministic (no LLM, no randomness): chunks are taken evenly spaced in
(source, chunk number) order; from each, the sentence whose words are rarest in the collection
(inverse document frequency over chunks), and from it the few rarest words in their order, as a
keyword query; the sentence itself is the expected answer. Such questions reuse the chunk's own
words, which BM25 and embeddings find easily: they flatter the scores, above all sparse ones.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from rag_api import payload
from rag_api.evaluation.questions import Question
from rag_api.points.collection import Collection

WARNING = (
    "generated questions flatter the scores: they are built from the chunks' own words; "
    "edit them into questions your users ask before trusting these numbers"
)
MAX_GENERATE = 500
TERMS = 6  # words a drafted query keeps
MIN_WORDS, MAX_WORDS = 6, 60  # a sentence worth asking about
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]{3,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def words(text: str) -> list[str]:
    """Content words: letters first, three characters or more, lowercased (numbers are answers)."""
    return [w.lower() for w in _WORD.findall(text) if len(w) >= 3]


def draft(collection: Collection, count: int) -> list[Question]:
    """Up to `count` question/source pairs from the collection's chunks (fewer if it is small)."""
    fields = [payload.TEXT, payload.SOURCE, payload.CHUNK_INDEX]
    chunks = sorted(
        (stored.source, stored.chunk_index or 0, stored.text)
        for stored in (payload.StoredChunk(r.payload) for r in collection.scan(fields=fields))
        if stored.text
    )
    if not chunks:
        return []
    frequency = Counter(w for _, _, text in chunks for w in set(words(text)))
    idf = {w: math.log(len(chunks) / df) + 1.0 for w, df in frequency.items()}
    drafted: list[Question] = []
    seen: set[str] = set()
    for position in _spread(len(chunks)):
        source, _, text = chunks[position]
        question = _from_chunk(source, text, idf)
        if question is not None and question.text not in seen:
            seen.add(question.text)
            drafted.append(question)
            if len(drafted) == count:
                break
    return drafted


def _spread(total: int) -> list[int]:
    """Every position, the evenly spaced ones first (halving the step), so any prefix covers
    the whole collection."""
    order: list[int] = []
    taken: set[int] = set()
    step = total
    while len(order) < total:
        for position in range(0, total, max(step, 1)):
            if position not in taken:
                taken.add(position)
                order.append(position)
        step //= 2
    return order


def _from_chunk(source: str, text: str, idf: dict[str, float]) -> Question | None:
    best: tuple[float, str] | None = None
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip().lstrip("#*->| ").strip()
        found = words(sentence)
        if not MIN_WORDS <= len(sentence.split()) <= MAX_WORDS or len(set(found)) < 3:
            continue
        rarity = sum(idf.get(w, 0.0) for w in set(found)) / math.sqrt(len(set(found)))
        if best is None or rarity > best[0]:
            best = (rarity, sentence)
    if best is None:
        return None
    sentence = best[1]
    distinct = list(dict.fromkeys(words(sentence)))
    keep = set(sorted(distinct, key=lambda w: (-idf.get(w, 0.0), w))[:TERMS])
    query = " ".join(w for w in distinct if w in keep)
    return Question(text=query + "?", sources=(source,), answer=sentence)
