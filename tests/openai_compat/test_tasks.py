"""A title made without an LLM (Open WebUI's title task) ends on a whole phrase: never on an
article, preposition, conjunction or other DANGLING word of the question's language, cut after
the last phrase that fits in about 50 characters. One table per language, one of the cut's rules.
Open WebUI's task prompts (tests/data/openwebui_task_prompts.json) are told from questions by the
key they ask for, and answered without an LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.embedding.bm25 import LANGUAGES
from rag_api.openai_compat.tasks import (
    DANGLING,
    TITLE_CHARS,
    TITLE_SLACK,
    TaskPrompt,
    short_title,
    task_prompt,
)

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


# how each rule shapes a title, one case a rule
RULES = [
    # exactly TITLE_CHARS: whole
    (
        "Which cipher guards data at rest, and who owns it?",
        "Which cipher guards data at rest, and who owns it?",
    ),
    # a phrase ends at a pause even before a word that is not DANGLING
    (
        "Refunds, exchanges, shipping costs, Canary Islands delivery times?",
        "Refunds, exchanges, shipping costs…?",
    ),
    # a DANGLING word behind a mark still starts the next phrase
    (
        "Which cipher protects data at rest (and who holds the keys for the backups)?",
        "Which cipher protects data at rest…?",
    ),
    # a phrase of exactly a third of the room is long enough
    (
        "Refund policies: Business Enterprise Professional Starter plans compared?",
        "Refund policies…?",
    ),
    # no phrase long enough and none ends past the room: cut after the last word that is not
    # DANGLING, or the last word when all are
    (
        "Refunds: what is it that you would have to do for us and how much of it?",
        "Refunds…?",
    ),
    (
        "And what is it that you would have to do for us and how much of it?",
        "And what is it that you would have to do for us…?",
    ),
    # only the marks around the cut go: a word's own letters stay
    (
        "Does Lumen Notes run on Mac OS X, and which versions of Windows are supported?",
        "Does Lumen Notes run on Mac OS X…?",
    ),
    # the question's language decides what dangles: "son" is a word in English
    (
        "How do I share a notebook with my son, and can he edit pages offline?",
        "How do I share a notebook with my son…?",
    ),
]


@pytest.mark.parametrize(("question", "title"), RULES)
def test_each_rule_of_the_cut_shows_in_a_title(question: str, title: str) -> None:
    assert short_title(question) == title


SAMPLES = json.loads(
    (Path(__file__).parents[1] / "data" / "openwebui_task_prompts.json").read_text("utf-8")
)
QUESTION = "¿Cuánto cuesta el plan Profesional para un equipo de doce personas al año?"
HISTORY = f"USER: {QUESTION}\nASSISTANT: 49 € al mes [1]."


def rendered(template: str, history: str = HISTORY) -> str:
    """The prompt as Open WebUI fills it in: the last messages as ROLE: lines."""
    for n in (2, 6):
        template = template.replace(f"{{{{MESSAGES:END:{n}}}}}", history)
    return template.replace("{{CURRENT_DATE}}", "2025-06-01")


PROMPTS = {entry["task"]: entry["template"] for entry in SAMPLES["templates"].values()}


@pytest.mark.parametrize("task", sorted(PROMPTS))
def test_a_task_prompt_is_told_by_the_key_it_asks_for(task: str) -> None:
    prompt = task_prompt("\n " + rendered(PROMPTS[task]))  # leading blanks are not text
    assert prompt == TaskPrompt(task, HISTORY)
    if task != "title":
        assert prompt.minimal_answer() == json.dumps({task: []})


def test_without_an_llm_the_title_is_the_first_question_cut_and_unescaped() -> None:
    asked = f"USER: {QUESTION}\nASSISTANT: 49 €.\nUSER: What about VAT?\nASSISTANT: Included."
    prompt = task_prompt(rendered(PROMPTS["title"], asked))
    assert prompt.minimal_answer() == '{"title": "¿Cuánto cuesta el plan Profesional…?"}'


def test_a_title_is_the_chat_itself_without_a_user_line_and_chat_without_any_text() -> None:
    assert task_prompt(rendered(PROMPTS["title"], "ASSISTANT: Hello")).minimal_answer() == (
        '{"title": "ASSISTANT: Hello"}'
    )
    assert task_prompt(rendered(PROMPTS["title"], "")).minimal_answer() == '{"title": "Chat"}'


def test_text_that_is_not_a_task_prompt_is_a_question() -> None:
    prompt = rendered(PROMPTS["title"])
    for text in (
        QUESTION,
        prompt.replace("### Task:", "### task:"),  # not the template's opening
        prompt.replace("### Task:", "Task:"),
        prompt.split("<chat_history>")[0],  # no chat quoted
        prompt.replace('{ "title"', "{ title"),  # no known key asked for
        '### Task:\nAnswer.\n<chat_history>\nUSER: { "title": "x" }\n</chat_history>',
        f"{QUESTION}\n\n{prompt}",  # a question that quotes a task prompt
    ):
        assert task_prompt(text) is None, text
