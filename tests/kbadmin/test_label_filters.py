"""The voice pipeline's reads and labels, on both engines: /v1/rag/search and /v1/rag/context
leave out boilerplate and low quality by default (the inject block never holds them), filters
override that, and results and chunk listings show each chunk's labels; a listing hides nothing."""

from __future__ import annotations

import pytest

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


def post(labelled: LabelledWorld, path: str, **body) -> dict:
    with labelled.client() as http:
        response = http.post(path, json={"query": QUESTION, "collection": "docs", **body})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("path", ["/v1/rag/search", "/v1/rag/context"])
def test_search_and_context_apply_the_defaults_and_the_filters(labelled, path) -> None:
    assert found(post(labelled, path)["results"]) == DEFAULT_FOUND
    boilerplate = post(labelled, path, filters={"types": ["boilerplate"]})["results"]
    assert found(boilerplate) == {"footer.md", "legacy.md"}
    everything = {"types": EVERY_TYPE, "min_quality": 0.0}
    assert found(post(labelled, path, filters=everything)["results"]) == ALL_FOUND
    routed = post(labelled, path, collection="auto", collections=["docs"])["results"]
    assert found(routed) == DEFAULT_FOUND


def test_the_inject_block_holds_no_boilerplate_by_default(labelled) -> None:
    block = post(labelled, "/v1/rag/context")["block"]
    assert "30 days of purchase" in block and "billing team" in block
    assert FOOTER not in block and GARBAGE not in block
    asked = post(labelled, "/v1/rag/context", filters={"types": ["boilerplate"]})["block"]
    assert FOOTER in asked


def test_results_show_their_labels(labelled) -> None:
    results = post(labelled, "/v1/rag/search", filters={"min_quality": 0})["results"]
    by_source = {r["source"]: r for r in results}
    assert by_source["scan.md"] | {"text": "", "score": 0} == {
        "id": "docs:scan.md#0",  # the chunk's id everywhere (collection:source#chunk_index)
        "text": "",
        "source": "scan.md",
        "score": 0,
        "chunk_index": 0,
        "metadata": {},
        "type": "prose",
        "quality": 0.1,
        "quality_reasons": ["broken_extraction", "low_ocr_confidence"],
    }
    assert "type" not in by_source["legacy.md"]


def test_chunk_listings_show_every_chunk_with_its_labels(labelled) -> None:
    with labelled.client() as http:
        listing = http.get("/v1/rag/chunks", params={"collection": "docs"}).json()
        ranked = http.get("/v1/rag/chunks", params={"collection": "docs", "query": QUESTION})
        posted = http.post("/v1/rag/chunks/list", json={"collection": "docs", "query": QUESTION})
    by_source = {item["source"]: item for item in listing["items"]}
    assert set(by_source) == ALL_FOUND  # a listing hides nothing
    assert (by_source["footer.md"]["type"], by_source["footer.md"]["quality"]) == (
        "boilerplate",
        0.8,
    )
    assert by_source["footer.md"]["quality_reasons"] == []
    assert "type" not in by_source["legacy.md"]
    for response in (ranked, posted):
        assert response.status_code == 200, response.text
        assert found(response.json()["items"]) == ALL_FOUND
        assert {i["source"]: i.get("type") for i in response.json()["items"]}["scan.md"] == "prose"
