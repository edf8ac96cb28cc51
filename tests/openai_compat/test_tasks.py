"""A title made without an LLM (Open WebUI's title task) ends on a whole phrase: never on an
article, preposition, conjunction or other DANGLING word of the question's language, cut after
the last phrase that fits in about 50 characters. One table per language."""

from __future__ import annotations

import pytest

from rag_api.embedding.bm25 import LANGUAGES
from rag_api.openai_compat.tasks import DANGLING, TITLE_CHARS, TITLE_SLACK, short_title

TITLES = [
    # issue 59: cut mid-phrase before
    (
        "Which encryption algorithm protects customer data at rest?",
        "Which encryption algorithm protects customer data…?",  # the phrase finished, 51 chars
    ),
    (
        "¿Cuánto dura el periodo de devolución de un producto comprado en la tienda online?",
        "¿Cuánto dura el periodo de devolución…?",  # not "…de un…?"
    ),
    # English
    ("How long is the refund window?", "How long is the refund window?"),
    (
        "How many API calls per minute is a Plus workspace allowed on the free plan?",
        "How many API calls per minute…?",
    ),
    (
        "Can I export every page of a notebook to a single PDF file with its attachments?",
        "Can I export every page of a notebook…?",
    ),
    (
        "Which cipher protects data at rest, and who holds the keys for it?",
        "Which cipher protects data at rest…?",
    ),
    (
        "Export every notebook of the workspace as Markdown, attachments included",
        "Export every notebook of the workspace…",
    ),
    # a question its phrase runs to the end of, within the slack: whole
    (
        "Which encryption algorithm protects customer records?",
        "Which encryption algorithm protects customer records?",
    ),
    # Spanish
    (
        "¿Cuánto cuesta el plan Profesional para un equipo de doce personas al año?",
        "¿Cuánto cuesta el plan Profesional…?",
    ),
    (
        "¿Puedo seguir cobrando con tarjeta en la caja si se cae la conexión a internet?",
        "¿Puedo seguir cobrando con tarjeta en la caja…?",
    ),
    (
        "¡Quiero cancelar la suscripción del local de Valencia y exportar las facturas!",
        "¡Quiero cancelar la suscripción del local…!",
    ),
    # Italian
    (
        "Quanto costa la licenza annuale del piano Business per un team di dodici persone?",
        "Quanto costa la licenza annuale…?",
    ),
    (
        "Come posso esportare tutte le note del mio spazio di lavoro in un file PDF?",
        "Come posso esportare tutte le note…?",
    ),
    (
        "Dove vengono conservati i dati dei clienti e per quanto tempo dopo la chiusura?",
        "Dove vengono conservati i dati dei clienti…?",
    ),
    # a phrase, or a word, that ends exactly where the room does: kept
    (
        "Can I export the notebooks of my team workspace, with all of their attachments?",
        "Can I export the notebooks of my team workspace…?",
    ),
    (
        "Lumen Notes desktop synchronisation certification Windows Linux macOS edition",
        "Lumen Notes desktop synchronisation certification…",
    ),
    # one word longer than a title: cut inside it
    ("x" * 80 + "?", "x" * 48 + "…?"),
]


@pytest.mark.parametrize(("question", "title"), TITLES)
def test_a_long_question_is_cut_after_a_whole_phrase(question: str, title: str) -> None:
    made = short_title(question)
    assert made == title
    assert len(made) <= TITLE_CHARS + TITLE_SLACK
    last = made.rstrip("…?!").split()[-1].strip("¿¡,;:").lower()
    assert not any(last in words for words in DANGLING.values())


def test_every_language_the_hub_analyses_has_a_table() -> None:
    assert set(DANGLING) == set(LANGUAGES)


def test_a_question_whose_language_cannot_be_told_is_cut_by_every_table() -> None:
    # no word tells the language ("con" is Spanish and Italian): it ends a phrase all the same
    question = "Lumen Notes Business Enterprise SSO SAML con Okta Azure AD SCIM provisioning"
    assert short_title(question) == "Lumen Notes Business Enterprise SSO SAML…"
