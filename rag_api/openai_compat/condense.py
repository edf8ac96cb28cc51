"""The retrieval query of a follow-up question, without an LLM.

"and how much does it cost?" finds nothing on its own: it leans on the previous question. But
"what about SSO?" after a refund question opens the same way and changes the topic. A short
question (at most MAX_TERMS content words for the collection's BM25 analyser) is read as
- dependent, searched together with the previous user message, when it contains an anaphoric
  pronoun ("it", "that", "eso", "questo", ...): "how do I fix it?", or when it starts with a
  connective ("and", "what about", "y", "qué hay de", ...) and names nothing after it but question
  words ("how", "cuánto", ...): "and how much?";
- undecided when the connective is followed by some content words, but fewer than OWN_TERMS:
  "what about SSO?", "and in Spanish?", "¿y para cancelar?". Such a turn could stand alone: it is
  searched both alone and merged with the previous question, and the merged search is kept only
  where its best passage is clearly better evidence (MERGE_MARGIN) than the turn alone finds, or
  where the turn alone finds nothing;
- its own topic otherwise, searched alone, so a new topic is never diluted: "and how long is the
  refund window?" names its own (refund, window).
The tables of cases are tests/openai_compat/test_condense.py. The LLM still gets the question as
asked, with the history.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

from rag_api.embedding.bm25 import SparseEncoder
from rag_api.openai_compat.conversation import Conversation
from rag_api.points.collection import Collection
from rag_api.routing.found import Found

MAX_TERMS = 4
OWN_TERMS = 2  # content words that make a topic of the question's own
# How much higher the merged search's best cosine must rise than the turn's own, as a share of
# the collection's room above its threshold ((cosine - threshold) / (1 - threshold)): 0.19 of
# MiniLM's cosine on `docs` (threshold 0.25), 0.035 of e5's on `soporte` (0.86). On the shipped
# kb, turns that change the topic gain at most 0.21 by merging ("¿y para cancelar?" after a
# refund question 0.210, "what about SSO?" after a cancel question 0.207; the issue's "what about
# SSO?" and "and how do I cancel?" after the refund question lose), and turns that need the
# previous one gain 0.276 or more ("and for nonprofits?" 0.276, "and how long?" 0.303, "what
# about Linux?" 0.691): tests/openai_compat/test_condense.py, RETRIEVALS. The margin sits between.
MERGE_MARGIN = 0.25
_WORDS = re.compile(r"\w+")

# Articles that double as pronouns (es "la", it "lo") are left out: they mark nothing.
CONNECTIVES = {
    "en": ("and", "also", "but", "so", "then", "what about", "how about", "and what about",
           "and how about"),
    "es": ("y", "e", "también", "pero", "entonces", "qué hay de", "qué hay del", "y si",
           "y qué hay de", "y qué hay del", "qué pasa con", "y qué pasa con"),
    "it": ("e", "ed", "anche", "ma", "quindi", "invece", "e se"),
}  # fmt: skip
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

Reading = Literal["dependent", "undecided", "own"]
FollowUp = Literal["merged", "alone", "none"]


@dataclass(frozen=True)
class Read:
    """How a question relates to the previous turn, and the words that say so."""

    reading: Reading
    why: str


@dataclass(frozen=True)
class Retrieval:
    """What was searched for a turn (the reply's `retrieval` field)."""

    query: str
    follow_up: FollowUp  # merged with the previous question, alone though it could be, or neither
    why: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def read_question(question: str, language: str, encoder: SparseEncoder) -> Read:
    """How `question` relates to the previous turn (see the module docstring)."""
    words = _WORDS.findall(question.lower())
    if not words or len(encoder.terms(question)) > MAX_TERMS:
        return Read("own", "not a short question")
    pronoun = next((w for w in words if w in PRONOUNS.get(language, set())), None)
    if pronoun is not None:
        return Read("dependent", f"'{pronoun}' points back to the previous question")
    connective = _connective(words, CONNECTIVES.get(language, ()))
    if connective is None:
        return Read("own", "no connective or pronoun leans on the previous question")
    asking = QUESTION_WORDS.get(language, set())
    rest = words[len(connective.split()) :]
    own = len(encoder.terms(" ".join(w for w in rest if w not in asking)))
    if own == 0:
        return Read("dependent", f"nothing named after '{connective}'")
    if own < OWN_TERMS:
        return Read("undecided", f"short, after '{connective}'")
    return Read("own", "names its own topic")


def _connective(words: list[str], connectives: tuple[str, ...]) -> str | None:
    """The longest connective the question opens with, if any."""
    for connective in sorted(connectives, key=len, reverse=True):
        if words[: len(connective.split())] == connective.split():
            return connective
    return None


def condensed_search(
    conversation: Conversation, reader: Collection, search: Callable[[str], Found]
) -> tuple[Found, Retrieval]:
    """The passages for the conversation's question, searched alone or after the previous
    question as `reader`'s analyser reads it; an undecided turn is searched both ways."""
    question, previous = conversation.question, conversation.previous_question()
    if not previous:
        return search(question), Retrieval(question, "none", "no previous question")
    read = read_question(question, reader.cfg.language, reader.sparse)
    merged = f"{previous}\n{question}"
    if read.reading == "own":
        return search(question), Retrieval(question, "none", read.why)
    if read.reading == "dependent":
        return search(merged), Retrieval(merged, "merged", read.why)
    alone_found, merged_found = search(question), search(merged)
    keep, why = _merge_wins(alone_found, merged_found)
    if keep:
        return merged_found, Retrieval(merged, "merged", f"{read.why}: {why}")
    return alone_found, Retrieval(question, "alone", f"{read.why}: {why}")


def _merge_wins(alone: Found, merged: Found) -> tuple[bool, str]:
    """Whether the merged search found clearly better evidence than the turn alone, and why."""
    if not merged.passages:
        return False, "with the previous question nothing is found"
    if not alone.passages:
        return True, "alone nothing is found"
    alone_best, merged_best = _best_cosine(alone), _best_cosine(merged)
    if alone_best is None or merged_best is None:  # sparse mode: no cosine to compare
        return True, "no cosine to compare (sparse mode)"
    gain = _room(merged, merged_best) - _room(alone, alone_best)
    scores = f"best cosine {merged_best:.3f} merged, {alone_best:.3f} alone"
    if gain >= MERGE_MARGIN:
        return True, f"{scores}: clearly better merged"
    return False, f"{scores}: not clearly better merged"


def _best_cosine(found: Found) -> float | None:
    cosines = [p.dense_score for p in found.passages if p.dense_score is not None]
    return max(cosines) if cosines else None


def _room(found: Found, cosine: float) -> float:
    """`cosine` on the answering collection's own scale: 0 at its threshold, 1 at a cosine of 1,
    so that models whose cosines spread differently compare (MiniLM's over 0.25-0.8 on `docs`,
    e5's over 0.86-0.95 on `soporte`)."""
    threshold = found.answering.cfg.retrieval.threshold
    return (cosine - threshold) / max(1.0 - threshold, 1e-6)
