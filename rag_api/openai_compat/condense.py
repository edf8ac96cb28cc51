"""The retrieval query of a follow-up question, without an LLM.

"and how much does it cost?" finds nothing on its own: it leans on the previous question. A short
question (at most MAX_TERMS content words for the collection's BM25 analyser) depends on the
previous turn when it
- contains an anaphoric pronoun ("it", "that", "eso", "questo", ...): "how do I fix it?", or
- starts with a connective ("and", "what about", "y", "qué hay de", ...) and names no topic of its
  own: fewer than OWN_TERMS content words once the connective and the question words ("how",
  "cuánto", ...) are left out: "and in Spanish?", "what about the price?", "¿y cuánto cuesta?".
Such a follow-up is searched together with the previous user message. Any other question is
searched alone, so a new topic is never diluted: "and how long is the refund window?" names its
own (refund, window). The table of cases is tests/openai_compat/test_condense.py. The LLM still
gets the question as asked, with the history.
"""

from __future__ import annotations

import re

from rag_api.embedding.bm25 import SparseEncoder
from rag_api.openai_compat.conversation import Conversation
from rag_api.points.collection import Collection

MAX_TERMS = 4
OWN_TERMS = 2  # content words that make a topic of the question's own
_WORDS = re.compile(r"\w+")

# Articles that double as pronouns (es "la", it "lo") are left out: they mark nothing.
CONNECTIVES = {
    "en": ("and", "also", "but", "so", "then", "what about", "how about"),
    "es": ("y", "e", "también", "pero", "entonces", "qué hay de", "qué hay del", "y si"),
    "it": ("e", "ed", "anche", "ma", "quindi", "invece", "e se"),
}
PRONOUNS = {
    "en": {"it", "its", "they", "them", "their", "this", "that", "these", "those", "one"},
    "es": {"eso", "esto", "ello", "ese", "esa", "este", "esta", "su", "sus", "le", "les", "allí"},
    "it": {"esso", "essa", "questo", "questa", "quello", "quella", "ciò", "ne", "suo", "sua", "li"},
}


# Words that ask rather than name (accents optional: users leave them out); with "is" and "does"
# left to the analyser's stop words.
QUESTION_WORDS = {
    "en": {"how", "what", "which", "when", "where", "who", "whom", "whose", "why", "much", "many"},
    "es": {"qué", "que", "cuál", "cual", "cuáles", "cuales", "cuánto", "cuanto", "cuánta",
           "cuanta", "cuántos", "cuantos", "cuántas", "cuantas", "cómo", "como", "dónde", "donde",
           "cuándo", "cuando", "quién", "quien", "quiénes", "quienes", "por"},
    "it": {"che", "cosa", "quale", "quali", "quanto", "quanta", "quanti", "quante", "come",
           "dove", "quando", "chi", "perché", "perche"},
}  # fmt: skip


def is_follow_up(question: str, language: str, encoder: SparseEncoder) -> bool:
    """Whether `question` depends on the previous turn (see the module docstring)."""
    words = _WORDS.findall(question.lower())
    if not words or len(encoder.terms(question)) > MAX_TERMS:
        return False
    if PRONOUNS.get(language, set()).intersection(words):
        return True
    rest = _after_connective(words, CONNECTIVES.get(language, ()))
    if rest is None:
        return False
    asking = QUESTION_WORDS.get(language, set())
    return len(encoder.terms(" ".join(w for w in rest if w not in asking))) < OWN_TERMS


def _after_connective(words: list[str], connectives: tuple[str, ...]) -> list[str] | None:
    """The words after the longest connective the question opens with; None without one."""
    for connective in sorted(connectives, key=len, reverse=True):
        size = len(connective.split())
        if words[:size] == connective.split():
            return words[size:]
    return None


def retrieval_query(conversation: Conversation, collection: Collection) -> str:
    """What to search for: the question, preceded by the previous question for a follow-up."""
    previous = conversation.previous_question()
    question = conversation.question
    if previous and is_follow_up(question, collection.cfg.language, collection.sparse):
        return f"{previous}\n{question}"
    return question
