"""The follow-up rule decided on a table: which follow-ups in English and Spanish depend on the
previous turn (searched with the previous question) and which name their own topic (searched
alone), with the collection's own BM25 analyser."""

from __future__ import annotations

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.openai_compat.condense import is_follow_up

DEPENDS = True
OWN_TOPIC = False
TABLE = [
    # English: leaning on the previous turn
    ("en", "and in Spanish?", DEPENDS),
    ("en", "What about the price?", DEPENDS),
    ("en", "And how much does it cost?", DEPENDS),
    ("en", "and how much?", DEPENDS),
    ("en", "How do I fix it?", DEPENDS),
    ("en", "And what is that?", DEPENDS),
    # English: a topic of their own, connective or not
    ("en", "And how long is the refund window?", OWN_TOPIC),
    ("en", "And is there a free trial?", OWN_TOPIC),
    ("en", "What about single sign-on for Okta?", OWN_TOPIC),
    ("en", "How long is the refund window?", OWN_TOPIC),
    ("en", "Which cipher protects data at rest in Lumen Notes?", OWN_TOPIC),
    # Spanish: leaning on the previous turn
    ("es", "¿y en inglés?", DEPENDS),
    ("es", "¿Y cuánto cuesta?", DEPENDS),
    ("es", "¿Qué hay del precio?", DEPENDS),
    ("es", "¿Y eso cuánto cuesta?", DEPENDS),
    ("es", "y en español", DEPENDS),
    # Spanish: a topic of their own
    ("es", "¿Y cuánto dura la prueba gratuita?", OWN_TOPIC),
    ("es", "¿Y el plazo de reembolso?", OWN_TOPIC),
    ("es", "¿Qué cifrado protege los datos en reposo?", OWN_TOPIC),
    ("es", "¿Cuánto cuesta el plan Profesional?", OWN_TOPIC),
]


@pytest.mark.parametrize(("language", "question", "depends"), TABLE)
def test_a_follow_up_merges_with_the_previous_question_only_when_it_depends_on_it(
    language: str, question: str, depends: bool
) -> None:
    encoder = sparse_encoder(language)
    assert is_follow_up(question, language, encoder) is depends
