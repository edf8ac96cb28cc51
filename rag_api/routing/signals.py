"""What the question itself says about where to look, before any search: declared keywords and
entities, words shared with a `description`, and the question's language (docs/routing.md)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from rag_api.config import RoutingConfig
from rag_api.embedding.languages import FUNCTION_WORDS

_WORD = re.compile(r"\w+")

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
