"""The extractive answer's sentence selection on real sentences (the kb's own, Spanish, Italian),
its markdown and HTML stripping, and the header it answers under."""

from __future__ import annotations

import re

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.llm.extractive import extractive_answer, select
from rag_api.llm.sentences import plain, split_sentences
from rag_api.search.passage import Passage
from tests.conftest import REPO

FAQ = (REPO / "kb" / "docs" / "product-faq.md").read_text(encoding="utf-8")


def section(text: str, heading: str) -> Passage:
    """The kb file's section under `heading`, as a passage (what a chunk of it holds)."""
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return Passage(heading, "product-faq.md", 0, 0.9, text[start : end if end > 0 else None], {})


def quoted(answer: str) -> list[str]:
    """The answer's quoted lines, without their citations."""
    return [re.sub(r"\s*\[\d+\]$", "", line[2:]) for line in answer.splitlines()[1:]]


@pytest.mark.parametrize(
    ("question", "heading", "fact", "not_alone"),
    [
        (
            "How many API calls per minute is a Plus workspace allowed?",
            "## What are the API rate limits?",
            "Plus: 120 requests per minute",
            "Limits are counted per workspace",
        ),
        (
            "Can we keep our workspace data in Europe?",
            "## Where is my data stored? Can we keep it in the EU?",
            "Frankfurt",
            None,
        ),
        (
            "Does it support SAML?",
            "## Do you support SSO and SAML?",
            "SAML 2.0 single sign-on is available on the Business and Enterprise plans only",
            "Every plan supports sign-in with email",
        ),
    ],
)
def test_the_quoted_sentence_holds_the_fact(question, heading, fact, not_alone) -> None:
    passages = [
        section(FAQ, heading),
        section(FAQ, "## What plans does Lumen Notes offer and how much do they cost?"),
    ]
    answer = extractive_answer(question, passages, "en", sparse_encoder("en"))
    holding = [line for line in answer.splitlines()[1:] if fact in line]
    assert holding and holding[0].endswith("[1]"), answer  # cited to the passage it comes from
    if not_alone:  # the sentence quoted before in place of the fact is never quoted without it
        assert not any(not_alone in line and fact not in line for line in quoted(answer)), answer
    assert len(answer) < 400, answer


SANTIAGO = Passage(
    "es",
    "santiago.md",
    0,
    0.9,
    "La catedral de Santiago de Compostela es la meta del Camino de Santiago y recibe peregrinos "
    "de todo el mundo. En 2019 llegaron 347.578 peregrinos, según la Oficina del Peregrino. "
    "El edificio actual es románico, con añadidos barrocos.",
    {},
)
COLOSSEO = Passage(
    "it",
    "colosseo.md",
    0,
    0.9,
    "Il Colosseo, originariamente noto come Anfiteatro Flavio, è il più grande anfiteatro del "
    "mondo. Situato nel centro di Roma, poteva contenere tra 50.000 e 87.000 spettatori. La sua "
    "costruzione fu iniziata da Vespasiano nel 72 d.C. e fu inaugurato da Tito nell'80 d.C. "
    "Oggi è uno dei simboli della città.",
    {},
)


def test_spanish_how_many_quotes_the_sentence_with_the_number() -> None:
    answer = extractive_answer(
        "¿Cuántos peregrinos llegaron a la catedral de Santiago en 2019?",
        [SANTIAGO],
        "es",
        sparse_encoder("es"),
    )
    assert answer.startswith("Según la base de conocimientos:\n") and "347.578" in answer, answer


def test_italian_when_quotes_the_sentence_with_the_date() -> None:
    answer = extractive_answer(
        "Quando fu inaugurato il Colosseo?", [COLOSSEO], "it", sparse_encoder("it")
    )
    assert answer.startswith("Dalla base di conoscenza:\n") and "nell'80 d.C." in answer, answer


def test_sentences_stay_in_the_passages_order_and_cite_their_passage() -> None:
    vacation = Passage(
        "v", "policies.md", 0, 0.5, "Employees get 25 days of vacation per year.", {}
    )
    passages = [
        section(FAQ, "## Can I get my money back if Lumen Notes is not right for us?"),
        vacation,
    ]
    chosen = select("How many days of vacation do employees get?", passages, sparse_encoder("en"))
    assert chosen and chosen[-1].text == "Employees get 25 days of vacation per year."
    assert chosen[-1].n == 2
    assert [(c.n, c.position) for c in chosen] == sorted((c.n, c.position) for c in chosen)


def test_the_heading_a_sentence_stands_under_counts_for_it() -> None:
    text = (
        "## What uptime do you guarantee?\n\n"
        "Enterprise workspaces have a 99.95% monthly SLA. Credits go on the next invoice.\n\n"
        "## Support hours\n\n"
        "Enterprise support answers within 1 hour around the clock."
    )
    passage = Passage("p", "faq.md", 0, 0.9, text, {})
    answer = extractive_answer(
        "What uptime does the Enterprise plan guarantee?", [passage], "en", sparse_encoder("en")
    )
    assert quoted(answer)[0].startswith("Enterprise workspaces have a 99.95% monthly SLA")
    assert "1 hour" not in answer


def test_markdown_and_html_are_stripped_from_quotes() -> None:
    assert (
        plain(
            "- **SAML 2.0** is in `Settings`, see [the guide](https://x.example/sso) &amp; <b>go</b>"
        )
        == "SAML 2.0 is in Settings, see the guide & go"
    )
    assert plain("| Plus | 120 requests per minute |") == "Plus, 120 requests per minute"
    sentences = split_sentences(
        "## Refunds\n\nYes. Refunds are possible within **30 days**\nof purchase."
    )
    assert [(s.text, s.heading) for s in sentences] == [
        ("Refunds", True),
        ("Yes.", False),
        ("Refunds are possible within 30 days of purchase.", False),
    ]
    soporte = (REPO / "kb" / "soporte" / "01_faq_producto.md").read_text(encoding="utf-8")
    start = soporte.index("## ¿Ofrecéis reembolsos?")
    refunds = Passage("r", "01_faq_producto.md", 0, 0.9, soporte[start : start + 400], {})
    answer = extractive_answer(
        "¿Cuántos días tengo para pedir un reembolso?", [refunds], "es", sparse_encoder("es")
    )
    assert "14 días naturales" in answer and "**" not in answer and "##" not in answer, answer


def test_the_header_says_a_configured_llm_failed_only_when_one_did() -> None:
    passages = [section(FAQ, "## What are the API rate limits?")]
    configured = extractive_answer("rate limits?", passages, "en", sparse_encoder("en"))
    assert configured.startswith("From the knowledge base:\n")
    assert "unavailable" not in configured
    failed = extractive_answer("rate limits?", passages, "es", sparse_encoder("es"), fallback=True)
    assert failed.startswith("El modelo de lenguaje no está disponible")


def test_no_quotable_sentence_gives_the_header_alone() -> None:
    heading_only = Passage("h", "x.md", 0, 0.9, "## Pricing", {})
    assert extractive_answer("price?", [heading_only], "en", sparse_encoder("en")) == (
        "From the knowledge base:\n"
    )


def test_initials_and_titles_do_not_end_a_sentence() -> None:
    """From XQuAD-es, where the fact sat after the dot: "M. Theo Kearney", "Río St. Johns"."""
    text = (
        "El vecindario incluye Kearney Boulevard, que lleva el nombre de un empresario y "
        "millonario de principios del siglo XX, M. Theo Kearney. Se centra en las orillas del "
        "Río St. Johns. En EE. UU. vivía desde el 200 a. C. hasta hoy. Fue 1901. Luego vino."
    )
    assert [s.text for s in split_sentences(text)] == [
        "El vecindario incluye Kearney Boulevard, que lleva el nombre de un empresario y "
        "millonario de principios del siglo XX, M. Theo Kearney.",
        "Se centra en las orillas del Río St. Johns.",
        "En EE. UU. vivía desde el 200 a. C. hasta hoy.",
        "Fue 1901.",
        "Luego vino.",
    ]


def test_a_clear_best_is_quoted_alone_and_close_ones_together_up_to_the_bound() -> None:
    from rag_api.llm.extractive import CONFIDENCE, MAX_QUOTED, Candidate, likelihoods, select_from

    def candidates(*scores: float) -> list[Candidate]:
        return [Candidate(1 + i % 2, i, f"Sentence {i}.", score=s) for i, s in enumerate(scores)]

    clear = candidates(0.2, 0.9, 0.3)  # the likeliest alone holds the answer with CONFIDENCE
    assert likelihoods(sorted(clear, key=lambda c: -c.score))[0] >= CONFIDENCE
    assert [c.position for c in select_from(clear)] == [1]
    two = candidates(0.80, 0.78, 0.2)  # neither alone: both, in the passages' order
    assert likelihoods(two)[0] < CONFIDENCE
    assert [(c.n, c.position) for c in select_from(two)] == [(1, 0), (2, 1)]
    level = candidates(*[0.5] * 6)  # nothing stands out: the bound, not every sentence
    assert len(select_from(level)) == MAX_QUOTED
    assert sum(likelihoods(level)) == pytest.approx(1.0)


def test_a_sentence_inside_a_quoted_one_is_not_quoted_again() -> None:
    from rag_api.llm.extractive import Candidate, select_from

    faq = Candidate(1, 0, "How long do refunds take? Refunds take 30 days.", score=0.8)
    answer = Candidate(1, 1, "Refunds take 30 days.", score=0.8)  # inside the FAQ's quote
    other = Candidate(2, 0, "Support answers within a day.", score=0.8)
    last = Candidate(3, 0, "Shipping is free.", score=0.8)
    chosen = select_from([faq, answer, other, last])  # each 1/4: the answer counts, unquoted
    assert [c.text for c in chosen] == [faq.text, other.text]


SAME_WORDS = Passage(
    "plans",
    "plans.md",
    0,
    0.9,
    "The Plus plan suits small teams. The Plus plan is billed monthly.",
    {},
)


def test_meaning_decides_between_sentences_the_words_cannot_tell_apart(caplog) -> None:
    question, encoder = "How often is the Plus plan paid?", sparse_encoder("en")
    meanings = {"The Plus plan suits small teams.": 0.2, "The Plus plan is billed monthly.": 0.9}
    asked: list[list[str]] = []

    def similarity(texts: list[str]) -> list[float]:
        asked.append(texts)
        return [meanings[t] for t in texts]

    by_words = [c.text for c in select(question, [SAME_WORDS], encoder)]
    assert by_words == list(meanings)  # a tie: both quoted
    assert [c.text for c in select(question, [SAME_WORDS], encoder, similarity)] == [
        "The Plus plan is billed monthly."
    ]
    assert sorted(asked[0]) == sorted(meanings)

    def broken(texts: list[str]) -> list[float]:
        raise RuntimeError("embedding server unreachable")

    with caplog.at_level("WARNING"):  # the answer of last resort answers by words alone
        assert [c.text for c in select(question, [SAME_WORDS], encoder, broken)] == by_words
    assert "embedding server unreachable" in caplog.text
    short = [c.text for c in select(question, [SAME_WORDS], encoder, lambda texts: [0.5])]
    assert short == by_words  # a model that answers for fewer sentences is not trusted


def test_meaning_is_asked_only_where_the_words_leave_it_open_and_of_their_best() -> None:
    from rag_api.llm.extractive import MEANING_CANDIDATES

    plans = ["Basic", "Plus", "Team", "Business", "Enterprise", "Studio", "Campus", "Nonprofit"]
    alike = " ".join(
        f"The refund window of the {p} plan is set by its contract." for p in plans * 3
    )
    passage = Passage("many", "many.md", 0, 0.9, alike + " The refund window lasts 30 days.", {})
    asked: list[list[str]] = []

    def similarity(texts: list[str]) -> list[float]:
        asked.append(texts)
        return [1.0 if "30 days" in t else 0.0 for t in texts]

    chosen = select("How long is the refund window?", [passage], sparse_encoder("en"), similarity)
    assert len(asked[0]) == MEANING_CANDIDATES  # of 25 alike by words, the dozen best
    assert "The refund window lasts 30 days." in asked[0]  # its number: what "how long" asks
    assert [c.text for c in chosen] == ["The refund window lasts 30 days."]
    clear = Passage("one", "one.md", 0, 0.9, "Refunds take 30 days. Support is open on Monday.", {})
    select("How long do refunds take?", [clear], sparse_encoder("en"), similarity)
    assert len(asked) == 1  # the words decide alone: nothing embedded
