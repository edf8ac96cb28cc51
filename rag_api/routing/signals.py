"""What the question itself says about where to look, before any search: declared keywords and
entities, words shared with a `description`, and the question's language (docs/routing.md)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable

from rag_api.config import RoutingConfig

_WORD = re.compile(r"\w+")

# Function words that are not also words of another of the three languages (no "de", "a", "e",
# "en", "in", "con", "una", "del", "al", "la", "lo", "se", "su", "era", "ha", "da"), so each hit
# is evidence for one language.
FUNCTION_WORDS = {
    "en": frozenset(
        "the of and is are was were what which who whom whose how when where why does do did "
        "with from that this these those by for to an be been has have had its not or on at "
        "as can could would should there their they it than".split()
    ),
    "es": frozenset(
        "el los las qué cuál cuáles cómo cuándo dónde quién quiénes cuánto cuántos cuántas "
        "por para es son fue fueron y que sus más este esta estos estas hay muy "
        "también pero entre desde sobre tiene tienen hasta según".split()
    ),
    "it": frozenset(
        "il gli della dello delle degli dei nel nella nelle negli nei che chi cosa quale quali "
        "come quando dove perché quanti quante quanto è sono erano stato stata per hanno "
        "anche più questo questa questi queste ma di sul sulla alla alle tra fra".split()
    ),
}
_ANY_FUNCTION_WORD = frozenset().union(*FUNCTION_WORDS.values())


def fold(text: str) -> str:
    """Lowercase without accents: how keywords are compared."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _contains(haystack: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", haystack) is not None


def declared_matches(question: str, cfg: RoutingConfig) -> list[str]:
    """`keyword:<k>` and `entity:<e>` for each of the collection's words the question contains."""
    folded = fold(question)
    found = [f"keyword:{k}" for k in cfg.keywords if _contains(folded, fold(k).strip())]
    found += [f"entity:{e}" for e in cfg.entities if _contains(question, e.strip())]
    return found


def description_matches(
    question: str, description: str, terms: Callable[[str], frozenset[int]]
) -> list[str]:
    """`description:<word>` for each word of the question whose stemmed term the description
    holds, `terms` being the collection's analyser (each stem counted once)."""
    held = terms(description) if description.strip() else frozenset()
    found: list[str] = []
    seen: set[int] = set()
    for word in _WORD.findall(question.lower()):
        if word in _ANY_FUNCTION_WORD:
            continue
        stems = terms(word)
        if stems and stems <= held and not stems <= seen:
            found.append(f"description:{word}")
            seen |= stems
    return found


@functools.lru_cache(maxsize=4096)
def analysed(encoder: Callable[[str], set[int]], text: str) -> frozenset[int]:
    """`encoder(text)` kept: a description and the words of recent questions are analysed once."""
    return frozenset(encoder(text))


def question_language(question: str, languages: Iterable[str]) -> str | None:
    """The language (among `languages`) whose function words the question uses strictly most."""
    words = _WORD.findall(question.lower())
    counts = {
        language: sum(word in FUNCTION_WORDS[language] for word in words)
        for language in set(languages)
        if language in FUNCTION_WORDS
    }
    if not counts:
        return None
    ranked = sorted(counts.values(), reverse=True)
    best = ranked[0]
    if best == 0 or (len(ranked) > 1 and ranked[1] == best):
        return None
    return next(language for language, count in counts.items() if count == best)
