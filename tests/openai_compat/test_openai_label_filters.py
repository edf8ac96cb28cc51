"""The hub's `filters` on the OpenAI routes, sent by the official SDK as `extra_body`, on both
engines: by default no boilerplate or low-quality passage reaches the LLM or `sources`; filters
override the collection's defaults; bad values are a 400 in OpenAI's shape naming the field."""

from __future__ import annotations

import openai
import pytest

from tests.support.labels import (
    ALL_FOUND,
    DEFAULT_FOUND,
    EVERY_TYPE,
    FOOTER,
    GARBAGE,
    QUESTION,
    found,
)
from tests.support.openai_support import ask


@pytest.fixture(scope="module")
def client(labelled) -> openai.OpenAI:
    return openai.OpenAI(base_url=labelled.live.url + "/v1", api_key="x", max_retries=0)


def chat(client: openai.OpenAI, model: str = "docs", **filters) -> list[dict]:
    extra = {"filters": filters} if filters else None
    completion = client.chat.completions.create(
        model=model, messages=ask(QUESTION), extra_body=extra
    )
    return completion.model_extra["sources"]


def test_chat_leaves_out_boilerplate_unless_asked(labelled, client) -> None:
    assert found(chat(client)) == DEFAULT_FOUND
    prompt = labelled.prompts()[-1]
    assert "30 days of purchase" in prompt and FOOTER not in prompt and GARBAGE not in prompt
    assert found(chat(client, types=["boilerplate"])) == {"footer.md", "legacy.md"}
    assert FOOTER in labelled.prompts()[-1]
    everything = chat(client, types=EVERY_TYPE, min_quality=0)
    assert found(everything) == ALL_FOUND
    scan = next(s for s in everything if s["source"] == "scan.md")
    assert (scan["type"], scan["quality"], scan["quality_reasons"]) == (
        "prose",
        0.1,
        ["broken_extraction", "low_ocr_confidence"],
    )


def test_chat_stream_takes_the_filters_too(labelled, client) -> None:
    stream = client.chat.completions.create(
        model="docs",
        messages=ask(QUESTION),
        stream=True,
        extra_body={"filters": {"types": ["boilerplate"]}},
    )
    *_, final = list(stream)
    assert found(final.model_extra["sources"]) == {"footer.md", "legacy.md"}


def test_responses_take_the_filters(labelled, client) -> None:
    default = client.responses.create(model="docs", input=QUESTION)
    assert found(default.model_extra["sources"]) == DEFAULT_FOUND
    assert FOOTER not in labelled.prompts()[-1]
    asked = client.responses.create(
        model="docs", input=QUESTION, extra_body={"filters": {"types": ["boilerplate"]}}
    )
    assert found(asked.model_extra["sources"]) == {"footer.md", "legacy.md"}
    assert FOOTER in labelled.prompts()[-1]


def test_auto_applies_the_filters_in_every_collection_it_searches(client) -> None:
    routed = chat(client, model="auto")
    for source in routed:
        if source["collection"] != "everything":  # whose own defaults let everything in
            assert source["source"] in DEFAULT_FOUND, source
    boilerplate = chat(client, model="auto", types=["boilerplate"], min_quality=0.5)
    assert found(boilerplate) <= {"footer.md", "legacy.md"} and boilerplate


@pytest.mark.parametrize(
    ("filters", "param"),
    [
        ({"types": ["footer"]}, "filters.types[0]"),
        ({"types": []}, "filters.types"),
        ({"min_quality": 2}, "filters.min_quality"),
        ({"colour": "red"}, "filters.colour"),
    ],
)
def test_bad_filters_are_400_naming_the_field(client, filters, param) -> None:
    with pytest.raises(openai.BadRequestError) as chat_error:
        client.chat.completions.create(
            model="docs", messages=ask(QUESTION), extra_body={"filters": filters}
        )
    assert chat_error.value.param == param
    with pytest.raises(openai.BadRequestError) as responses_error:
        client.responses.create(model="docs", input=QUESTION, extra_body={"filters": filters})
    assert responses_error.value.param == param
