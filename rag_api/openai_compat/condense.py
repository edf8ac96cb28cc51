"""The retrieval query of a follow-up question, without an LLM.

"and how much does it cost?" finds nothing on its own: it leans on the previous question. A
question is a follow-up when it is short (at most MAX_TERMS content words for the collection's
BM25 analyser) AND it starts with a connective ("and", "what about", "y", "e", ...) or contains an
anaphoric pronoun ("it", "that", "eso", "questo", ...). A follow-up is searched together with the
previous user message; any other question is searched alone, so a new topic is never diluted.
The LLM still gets the question as asked, with the history.
"""

from __future__ import annotations

import re

from rag_api.embedding.bm25 import SparseEncoder
from rag_api.openai_compat.conversation import Conversation
from rag_api.points.collection import Collection

MAX_TERMS = 4
_WORDS = re.compile(r"\w+")

# Articles that double as pronouns (es "la", it "lo") are left out: they mark nothing.
CONNECTIVES = {
    "en": ("and", "also", "but", "so", "then", "what about", "how about"),
    "es": ("y", "e", "también", "pero", "entonces", "qué hay de", "y si"),
    "it": ("e", "ed", "anche", "ma", "quindi", "invece", "e se"),
}
PRONOUNS = {
    "en": {"it", "its", "they", "them", "their", "this", "that", "these", "those", "there", "one"},
    "es": {"eso", "esto", "ello", "ese", "esa", "este", "esta", "su", "sus", "le", "les", "allí"},
    "it": {"esso", "essa", "questo", "questa", "quello", "quella", "ciò", "ne", "suo", "sua", "li"},
}


def is_follow_up(question: str, language: str, encoder: SparseEncoder) -> bool:
    """Whether `question` leans on the previous turn (see the module docstring)."""
    words = _WORDS.findall(question.lower())
    if not words or len(encoder.terms(question)) > MAX_TERMS:
        return False
    opening = " ".join(words[:3])
    starts = any(opening == c or opening.startswith(c + " ") for c in CONNECTIVES.get(language, ()))
    return starts or bool(PRONOUNS.get(language, set()).intersection(words))


def retrieval_query(conversation: Conversation, collection: Collection) -> str:
    """What to search for: the question, preceded by the previous question for a follow-up."""
    previous = conversation.previous_question()
    question = conversation.question
    if previous and is_follow_up(question, collection.cfg.language, collection.sparse):
        return f"{previous}\n{question}"
    return question
