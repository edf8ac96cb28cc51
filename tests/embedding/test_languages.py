"""Which language a text is in, by the function words it uses (rag_api.embedding.languages)."""

from __future__ import annotations

import pytest

from rag_api.embedding.languages import function_words_in, text_language


@pytest.mark.parametrize(
    ("text", "languages", "found"),
    [
        ("The invoice", ["en"], "en"),  # one function word is enough, one language to choose
        ("invoice", ["en"], None),  # none at all
        ("invoice", ["en", "es"], None),
        ("the invoice y la factura", ["en", "es"], None),  # one each: a tie
        ("the invoice of the month y la factura", ["en", "es"], "en"),
        ("the invoice y la factura para el mes", ["en", "es", "it"], "es"),
        ("the invoice", ["xx"], None),  # a language without a word list
    ],
)
def test_the_language_whose_function_words_are_strictly_most(
    text: str, languages: list[str], found: str | None
) -> None:
    assert text_language(text, languages) == found


def test_function_words_are_counted_each_time_they_occur() -> None:
    assert function_words_in(["the", "invoice", "of", "the", "month"], "en") == 3
    assert function_words_in(["the", "invoice"], "es") == 0
