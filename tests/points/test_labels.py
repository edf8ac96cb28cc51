"""Each type and each quality reason, on the kind of text real knowledge bases carry."""

from __future__ import annotations

import pytest

from rag_api import payload
from rag_api.points.labels import label
from rag_api.points.repetition import Census

PROSE = (
    "Refunds: you can ask for a full refund within 30 days of your first payment for a paid "
    "plan, and within 30 days of an annual renewal. Write to support from the billing owner's "
    "email address and include your workspace URL."
)
TOC = """# Table of contents
1. Introduction .......................... 3
2. Installing the terminal ............... 7
3. Daily cash closing ................... 12
4. Invoices and receipts ................ 18
5. Troubleshooting ...................... 25"""
TABLE = """| Plan | Price per member | Storage |
| --- | --- | --- |
| Free | $0 | 2 GB per workspace |
| Plus | $8 | 20 GB per member |
| Business | $15 | 100 GB per member |"""
QA = """## Can I get my money back if Lumen Notes is not right for us?

Yes. You can ask for a full refund within 30 days of your first payment for a paid plan."""
QA_ES = """¿Puedo probar el programa gratis antes de pagar?
Sí. Todas las cuentas nuevas tienen 30 días de prueba del plan Profesional sin tarjeta."""
LIST = """Before you start, have these at hand:
- the workspace URL
- an owner account with two-factor authentication
- the CSV export of your members
- the billing contact's email address"""
CODE = """```python
client = RagHub("http://localhost:8000")
answer = client.query("docs", "How do refunds work?")
print(answer.text)
```"""
HEADING = "## Billing and invoices\n\nSee below."
COOKIES = (
    "We use cookies to improve your experience and to measure traffic. By clicking Accept all "
    "you agree to our use of cookies. Read our Privacy Policy to learn more. Accept all | Reject"
)
FOOTER = "© 2024 Lantern Row Software, Inc. All rights reserved."
NAV = "* Home\n* Products\n* Pricing\n* Blog\n* Contact us\n* Log in"
PAGE_FURNITURE = "Page 3 of 12\n\n3\n\nPage 4 of 12"
MOJIBAKE = (
    "La configuraciÃ³n de la caja se guarda automÃ¡ticamente cada dÃ­a y el cierre "
    "â€œZâ€\x9d se imprime al final de la jornada con el resumen de ventas."
)
HYPHENATED = (
    "The termi- nal prints a receipt after every sale and the inter- national version also "
    "shows the tax regis- tration number of the shop on the foot- er of each ticket it prints."
)
ONE_LETTER_LINES = "T\nh\ne\nt\ne\nr\nm\ni\nn\na\nl\n prints receipts."
SPANISH = (
    "El periodo de prueba dura treinta días y no hace falta tarjeta para empezar. Cuando "
    "termina, la cuenta pasa al plan gratuito si nadie ha elegido un plan de pago."
)
SYMBOLS = "| 2019 | 12.5 | 13.1 | 0.4 |\n| 2020 | 14.2 | 15.0 | 0.8 |\n| 2021 | 9.9 | 10.3 | 0.4 |"
TRUNCATED = (
    "and the balance is carried over to the next month when the workspace owner has not "
    "chosen another plan before the renewal date, which is shown on the billing page"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (PROSE, "prose"),
        (TOC, "boilerplate"),
        (TABLE, "table"),
        (QA, "qa"),
        (QA_ES, "qa"),
        (LIST, "list"),
        (CODE, "code"),
        (HEADING, "heading"),
        (COOKIES, "boilerplate"),
        (FOOTER, "boilerplate"),
        (NAV, "boilerplate"),
        (PAGE_FURNITURE, "boilerplate"),
    ],
)
def test_each_type_is_recognised_from_the_text(text: str, kind: str) -> None:
    assert label(text, "en").type == kind


def test_a_clean_passage_has_full_quality_and_no_reasons() -> None:
    assert label(PROSE, "en") == label(PROSE, "en", {}, 0.0)
    assert (label(PROSE, "en").quality, label(PROSE, "en").reasons) == (1.0, ())


@pytest.mark.parametrize(
    ("text", "language", "reason"),
    [
        ("See page 4.", "en", "too_short"),
        (SYMBOLS, "en", "mostly_symbols"),
        (MOJIBAKE, "es", "broken_extraction"),
        (HYPHENATED, "en", "broken_extraction"),
        (ONE_LETTER_LINES, "en", "broken_extraction"),
        (SPANISH, "en", "other_language"),
        (TRUNCATED, "en", "truncated"),
    ],
)
def test_each_reason_lowers_the_quality_and_is_named(text: str, language: str, reason: str) -> None:
    labelled = label(text, language)
    assert reason in labelled.reasons
    assert labelled.quality < 1.0


def test_the_collection_language_is_not_another_language() -> None:
    assert "other_language" not in label(SPANISH, "es").reasons
    assert "other_language" not in label(PROSE, "en").reasons


def test_garbage_falls_below_the_default_minimum_and_a_short_answer_does_not() -> None:
    assert label(MOJIBAKE, "es").quality < 0.3
    assert label("| 1 | 2 |", "en").quality < 0.3  # short and only digits
    assert label("Refunds take 5 to 10 business days.", "en").quality >= 0.3


def test_ocr_confidence_feeds_quality() -> None:
    sure = label(PROSE, "en", {"ocr": True, "ocr_confidence": 0.93})
    unsure = label(PROSE, "en", {"ocr": True, "ocr_confidence": 0.4})
    assert (sure.quality, sure.reasons) == (1.0, ())
    assert unsure.reasons == ("low_ocr_confidence",) and unsure.quality == pytest.approx(0.4)


def test_repetition_across_the_collection_makes_boilerplate() -> None:
    assert label(PROSE, "en", repeated=0.49).type == "prose"
    assert label(PROSE, "en", repeated=0.5).type == "boilerplate"


def test_labels_go_into_the_payload_under_their_field_names() -> None:
    body = label(MOJIBAKE, "es").payload()
    assert set(body) == set(payload.LABEL_FIELDS)
    assert payload.StoredChunk(body).labels() == body


def test_the_census_counts_units_not_chunks_and_forgets_what_goes() -> None:
    census = Census()
    line = "Lantern Row Software, 12 Harbour Street"
    census.add("a1", f"{line}\nfirst page text", "a.html")
    census.add("a2", line, "a.html")  # the same page again: still one unit
    census.add("a3", "12", "a.html")  # no line that can repeat
    census.add("b1", line.upper(), "b.html")  # case aside, the same line
    assert census.repeated(line, "c.html") == 1.0 and census.stored_share("a2") == 0.0
    assert census.add("c1", line, "c.html") == census.remove("b1") != set()
    for pid in ("a3", "a1", "a2", "c1"):
        census.remove(pid)
    assert (census.points, census.unit_lines, census.units) == ({}, {}, {})


def test_templated_notes_that_differ_in_their_numbers_are_not_furniture() -> None:
    census = Census()
    for order in (8942, 8943, 8944):
        census.add(f"o{order}", f"Order {order} shipped to the customer today.", f"crm/{order}")
    assert census.repeated("Order 8945 shipped to the customer today.", "crm/8945") == 0.0


def spaced(words: int, short: int, word: str = "t") -> str:
    """`words` words on one line, `short` of them `word` (one letter: spaced-out letters), the
    rest ordinary ones: letters enough not to be too short."""
    return " ".join([word] * short + ["invoice"] * (words - short))


@pytest.mark.parametrize(
    ("text", "broken"),
    [
        (spaced(12, 12), True),  # "T h i s  i s ..." all the way
        (spaced(20, 12), True),  # exactly 60% one letter long
        (spaced(20, 11), False),  # 55%
        (spaced(11, 11), False),  # too few words to judge
        (spaced(20, 12, "ab"), False),  # two-letter words are not spaced-out letters
    ],
)
def test_letters_spaced_out_are_a_broken_extraction(text: str, broken: bool) -> None:
    assert ("broken_extraction" in label(text, "xx").reasons) is broken


ES_WORDS = "el los las que y para pero por".split()  # Spanish function words, none English


@pytest.mark.parametrize(
    ("theirs", "own", "filler", "other"),
    [
        (3, 0, 9, True),  # 3 of 12 words Spanish, none English: another language
        (3, 0, 8, False),  # 11 words: too few to judge
        (2, 0, 10, False),  # 2 Spanish words are not enough
        (3, 1, 8, True),  # 3 Spanish for 1 English: three times as many
        (5, 2, 5, False),  # 5 for 2: not three times as many
        (6, 2, 4, True),  # 6 for 2
    ],
)
def test_another_language_takes_three_of_its_words_and_three_times_the_collections(
    theirs: int, own: int, filler: int, other: bool
) -> None:
    words = ES_WORDS[:theirs] + ["the", "of"][:own] + ["invoice"] * filler
    text = " ".join(words)
    assert ("other_language" in label(text, "en").reasons) is other
    assert "other_language" not in label(text, "xx").reasons  # a language without a word list
