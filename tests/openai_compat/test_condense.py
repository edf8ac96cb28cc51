"""The follow-up rule decided on two tables. READINGS: how a question in English or Spanish leans
on the previous turn, by the collection's own BM25 analyser (dependent: searched with the
previous question; undecided: searched both ways; own: searched alone). RETRIEVALS: what the
undecided and dependent turns are searched as on the shipped kb (`docs` with MiniLM, `soporte`
with e5), after a given previous question, and the passage that comes first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.openai_compat.condense import MAX_TERMS, condensed_search, read_question
from rag_api.openai_compat.conversation import Conversation
from rag_api.routing.found import search_target
from rag_api.routing.target import Target
from rag_api.search.retrieval import SearchRequest

DEPENDENT, UNDECIDED, OWN = "dependent", "undecided", "own"
READINGS = [
    # English: leaning on the previous turn
    ("en", "and how much?", DEPENDENT),
    ("en", "And how much does it cost?", DEPENDENT),
    ("en", "How do I fix it?", DEPENDENT),
    ("en", "And what is that?", DEPENDENT),
    ("en", "And how long does it take?", DEPENDENT),
    # English: short after a connective, a follow-up or a new topic
    ("en", "and in Spanish?", UNDECIDED),
    ("en", "What about the price?", UNDECIDED),
    ("en", "What about SSO?", UNDECIDED),
    ("en", "And how do I cancel?", UNDECIDED),
    ("en", "And what about exports?", UNDECIDED),
    # English: a topic of their own, connective or not
    ("en", "And how long is the refund window?", OWN),
    ("en", "And is there a free trial?", OWN),
    ("en", "What about single sign-on for Okta?", OWN),
    ("en", "How long is the refund window?", OWN),
    ("en", "Which cipher protects data at rest in Lumen Notes?", OWN),
    # Spanish: leaning on the previous turn
    ("es", "¿Y eso cuánto cuesta?", DEPENDENT),
    ("es", "¿Y cuánto?", DEPENDENT),
    # Spanish: short after a connective
    ("es", "¿y en inglés?", UNDECIDED),
    ("es", "¿Y cuánto cuesta?", UNDECIDED),
    ("es", "¿Qué hay del precio?", UNDECIDED),
    ("es", "y en español", UNDECIDED),
    ("es", "¿Y para cancelar?", UNDECIDED),
    ("es", "¿Y qué pasa con la garantía?", UNDECIDED),
    # Spanish: a topic of their own
    ("es", "¿Y cuánto dura la prueba gratuita?", OWN),
    ("es", "¿Y el plazo de reembolso?", OWN),
    ("es", "¿Y qué pasa con la exportación de datos?", OWN),
    ("es", "¿Qué cifrado protege los datos en reposo?", OWN),
    ("es", "¿Cuánto cuesta el plan Profesional?", OWN),
]


@pytest.mark.parametrize(("language", "question", "reading"), READINGS)
def test_a_question_is_read_as_dependent_undecided_or_its_own_topic(
    language: str, question: str, reading: str
) -> None:
    assert read_question(question, language, sparse_encoder(language)).reading == reading


# a follow-up of exactly MAX_TERMS content words leaning on the previous turn, and one word more
AT_THE_BOUND = [
    ("en", "Does it sync notes offline on Android?", "tablets"),
    ("es", "¿Y eso funciona sin conexión en tabletas Android?", "nuevas"),
]


@pytest.mark.parametrize(("language", "dependent", "word"), AT_THE_BOUND)
def test_a_follow_up_of_exactly_max_terms_content_words_is_still_short(
    language: str, dependent: str, word: str
) -> None:
    encoder = sparse_encoder(language)
    own = dependent.replace("?", f" {word}?")
    assert [len(encoder.terms(q)) for q in (dependent, own)] == [MAX_TERMS, MAX_TERMS + 1]
    assert read_question(dependent, language, encoder).reading == DEPENDENT  # merged
    assert read_question(own, language, encoder).reading == OWN  # long enough to stand alone


REFUND = "How many days do I have to ask for a refund?"
REEMBOLSO = "¿Cuánto tiempo tengo para solicitar un reembolso?"
HARDWARE = "¿Qué hardware puedo usar con Caxalia TPV?"
ENVIO = "¿Cuánto tarda el envío?"
CIPHER = "Which cipher protects data at rest in Lumen Notes?"
PLATFORMS = "Which platforms does Lumen Notes run on?"
SSO = "Business and Enterprise owners can also make SSO mandatory"
CANCEL = "Only a workspace owner can cancel"
CANCELAR = "Cancelar suscripción"
ENVIOS = "Los pedidos de hardware se envían desde nuestro almacén"
RETRIEVALS = [
    # English: a new topic, searched alone (merged, each finds the previous topic's passage)
    ("docs", REFUND, "What about SSO?", "alone", SSO),
    ("docs", REFUND, "And how do I cancel?", "alone", CANCEL),
    ("docs", "What about SSO?", "And how do I cancel?", "alone", CANCEL),
    ("docs", REFUND, "And what about exports?", "alone", "Any member can export"),
    ("docs", CIPHER, "And how do I cancel?", "alone", CANCEL),
    ("docs", "Is there a free trial?", "What about SSO?", "alone", SSO),
    ("docs", "How do I cancel my subscription?", "What about SSO?", "alone", SSO),
    ("docs", PLATFORMS, "What about refunds?", "alone", "full refund"),
    # English: searched with the previous question
    ("docs", REFUND, "And how long does it take?", "merged", "within 5 to 10 business days"),
    ("docs", REFUND, "and how much?", "merged", "full refund"),
    ("docs", "What does error LMN-4031 mean?", "How do I fix it?", "merged", "LMN-4031"),
    ("docs", "Is there a free trial?", "And how long?", "merged", "14-day free trial"),
    ("docs", PLATFORMS, "What about Linux?", "merged", "Ubuntu"),
    ("docs", "Do you support SSO and SAML?", "What about Okta?", "merged", SSO),
    (
        "docs",
        "Which formats can I export my notes to?",
        "and in Spanish?",
        "merged",
        "Any member can export",
    ),
    ("docs", "Which payment methods do you accept?", "And for nonprofits?", "merged", "nonprofits"),
    ("docs", CIPHER, "And what about in transit?", "merged", "in transit"),
    # Spanish: a new topic, searched alone
    ("soporte", REEMBOLSO, "¿Y para cancelar?", "alone", CANCELAR),
    ("soporte", REEMBOLSO, "¿Y cómo cancelo?", "alone", CANCELAR),
    ("soporte", REEMBOLSO, "¿Y qué pasa con el hardware?", "alone", "3 años de garantía"),
    ("soporte", ENVIO, "¿Y qué pasa con los reembolsos?", "alone", "14 días naturales"),
    ("soporte", ENVIO, "¿Y para cancelar?", "alone", CANCELAR),
    # Spanish: searched with the previous question
    ("soporte", REEMBOLSO, "¿Y cuánto tarda?", "merged", "14 días naturales"),
    ("soporte", REEMBOLSO, "¿Y eso cuánto tarda?", "merged", "14 días naturales"),
    ("soporte", HARDWARE, "¿Qué hay del precio?", "merged", "CX-TPV-15: 549 €"),
    ("soporte", HARDWARE, "¿Y cuánto cuesta?", "merged", "CX-TPV-15: 549 €"),
    ("soporte", HARDWARE, "¿Y la garantía?", "merged", "3 años de garantía"),
    ("soporte", ENVIO, "¿Y a Canarias?", "merged", ENVIOS),
    ("soporte", ENVIO, "¿Y para Baleares?", "merged", ENVIOS),
    ("soporte", ENVIO, "¿y en inglés?", "merged", ENVIOS),
    pytest.param(
        "soporte",
        REEMBOLSO,
        "¿Y qué pasa con la garantía?",
        "alone",
        "3 años de garantía",
        marks=pytest.mark.xfail(
            strict=True,
            reason="asked alone e5 puts the warranty passage first but below soporte's 0.86 "
            "threshold: merged, the refund passage is all there is",
        ),
    ),
]


def conversation(previous: str, question: str) -> Conversation:
    history = [{"role": "user", "content": previous}, {"role": "assistant", "content": "…"}]
    return Conversation(question, history, None)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "previous", "question", "follow_up", "quoted"), RETRIEVALS)
def test_a_short_turn_is_merged_only_where_that_finds_clearly_better_evidence(
    shipped, name: str, previous: str, question: str, follow_up: str, quoted: str
) -> None:
    hub = shipped.hub
    collection = hub.collection(name)
    found, retrieval = condensed_search(
        conversation(previous, question),
        collection,
        lambda text: search_target(hub, Target(collection), SearchRequest(query=text)),
    )
    assert (retrieval.follow_up, quoted in found.passages[0].text) == (follow_up, True), retrieval
    searched = f"{previous}\n{question}" if follow_up == "merged" else question
    assert retrieval.query == searched


@pytest.mark.slow
def test_an_empty_side_and_missing_cosines_decide_without_a_margin(shipped) -> None:
    hub = shipped.hub
    docs = hub.collection("docs")
    found = search_target(hub, Target(docs), SearchRequest(query=REFUND))
    nothing = replace(found, passages=[])
    sparse = replace(found, passages=[replace(p, dense_score=None) for p in found.passages])

    def outcome(alone, merged) -> str:
        searches = iter([alone, merged])  # condensed_search searches alone, then merged
        return condensed_search(
            conversation(REFUND, "What about SSO?"), docs, lambda _: next(searches)
        )[1].follow_up

    assert outcome(nothing, found) == "merged"  # alone it finds nothing
    assert outcome(found, nothing) == "alone"
    assert outcome(sparse, sparse) == "merged"  # no cosine to compare: merged, as before
