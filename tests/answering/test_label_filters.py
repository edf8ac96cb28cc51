"""filters.types / filters.min_quality on POST /query/{collection} and the routing collection
`auto`, on both engines: the collection's defaults leave out boilerplate and low quality (never
unlabelled chunks), a request's filters override them, bad values are refused naming the field,
and every source shows its labels."""

from __future__ import annotations

import pytest

from tests.conftest import assert_error_shape
from tests.support.labels import (
    ALL_FOUND,
    DEFAULT_FOUND,
    EVERY_TYPE,
    FOOTER,
    GARBAGE,
    QUESTION,
    LabelledWorld,
    found,
)


def sources(labelled: LabelledWorld, collection: str, **body) -> set[str]:
    with labelled.client() as http:
        response = http.post(
            f"/query/{collection}", json={"query": QUESTION, "generate": False, **body}
        )
    assert response.status_code == 200, response.text
    return found(response.json()["sources"])


def test_defaults_leave_out_boilerplate_and_low_quality_but_keep_unlabelled(labelled) -> None:
    assert sources(labelled, "docs") == DEFAULT_FOUND
    assert sources(labelled, "docs", filters={"types": ["boilerplate"]}) == {
        "footer.md",
        "legacy.md",
    }
    everything = {"types": EVERY_TYPE, "min_quality": 0}
    assert sources(labelled, "docs", filters=everything) == ALL_FOUND
    assert sources(labelled, "docs", filters={"min_quality": 0}) == DEFAULT_FOUND | {"scan.md"}
    prose = {"types": ["prose"], "min_quality": 0.05}
    assert sources(labelled, "docs", filters=prose) == {"refunds.md", "scan.md", "legacy.md"}


def test_a_collection_s_retrieval_block_sets_the_defaults(labelled) -> None:
    assert sources(labelled, "everything") == ALL_FOUND
    assert sources(labelled, "everything", filters={"min_quality": 0.3}) == ALL_FOUND - {"scan.md"}
    assert sources(labelled, "everything", filters={"types": ["table"]}) == {"legacy.md"}


def test_sources_show_their_labels(labelled) -> None:
    with labelled.client() as http:
        body = {"query": QUESTION, "generate": False, "filters": {"min_quality": 0}}
        listed = http.post("/query/docs", json=body).json()["sources"]
    by_source = {s["source"]: s for s in listed}
    scan = by_source["scan.md"]
    assert (scan["type"], scan["quality"]) == ("prose", 0.1)
    assert scan["quality_reasons"] == ["broken_extraction", "low_ocr_confidence"]
    assert by_source["refunds.md"]["type"] == "prose"
    assert not {"type", "quality", "quality_reasons"} & set(by_source["legacy.md"])


def test_boilerplate_never_reaches_the_llm_by_default(labelled) -> None:
    with labelled.client() as http:
        answered = http.post("/query/docs", json={"query": QUESTION})
        assert answered.status_code == 200, answered.text
        prompt = labelled.prompts()[-1]
        assert "30 days of purchase" in prompt and "billing team" in prompt
        assert FOOTER not in prompt and GARBAGE not in prompt
        asked = {"query": QUESTION, "filters": {"types": ["boilerplate"], "min_quality": 0}}
        assert http.post("/query/docs", json=asked).status_code == 200
        assert FOOTER in labelled.prompts()[-1]


def test_the_routing_collection_applies_the_filters_to_each_collection(labelled) -> None:
    routed = {"collections": ["docs", "everything"]}
    assert sources(labelled, "auto", **routed) >= DEFAULT_FOUND
    with labelled.client() as http:
        body = {"query": QUESTION, "generate": False, **routed}
        listed = http.post("/query/auto", json=body).json()["sources"]
        by_collection = {
            c: found([s for s in listed if s["collection"] == c]) for c in routed["collections"]
        }
        assert by_collection["docs"] <= DEFAULT_FOUND  # each collection's own defaults
        assert "footer.md" not in by_collection["docs"]
        body["filters"] = {"types": ["boilerplate"]}
        listed = http.post("/query/auto", json=body).json()["sources"]
    assert found(listed) <= {"footer.md", "legacy.md"} and "footer.md" in found(listed)


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"types": ["footer"]}, "filters.types"),
        ({"types": []}, "filters.types"),
        ({"types": "prose"}, "filters.types"),
        ({"min_quality": 2}, "filters.min_quality"),
        ({"min_quality": -0.1}, "filters.min_quality"),
        ({"min_quality": "high"}, "filters.min_quality"),
        ({"min_quality": True}, "filters.min_quality"),
    ],
)
def test_bad_label_filters_are_refused_naming_the_field(labelled, filters, field) -> None:
    with labelled.client() as http:
        for path in ("/query/docs", "/query/auto", "/v1/rag/search", "/v1/rag/context"):
            response = http.post(path, json={"query": QUESTION, "filters": filters})
            error = assert_error_shape(response, 422, "INVALID_REQUEST")
            assert field in error["message"], (path, error)
