"""/v1/rag/* refuses what it cannot take: bodies over the limits (413), bad bodies and bad query
parameters in the one error shape naming the field; JSON booleans, their strings and integers for
floats are taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.kbadmin.models import CHUNK_MAX_CHARS, DOCUMENT_MAX_CHARS, ITEMS_MAX
from tests.conftest import LiveServer, assert_error_shape, hash_collection, write_config
from tests.kbadmin.conftest import DOC, nested, rag


def test_limits_answer_413(tmp_path: Path, make_settings, serve) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection()})
    server = serve(make_settings(config, max_body_bytes=400_000))
    with rag(server) as http:
        big = "word " * (DOCUMENT_MAX_CHARS // 5 + 1)
        for path in ("/add/document", "/upsert/document"):
            response = http.post(path, json={"source": "big", "text": big})
            assert (
                str(DOCUMENT_MAX_CHARS)
                in assert_error_shape(response, 413, "PAYLOAD_TOO_LARGE")["message"]
            )
        many = {"items": [{"text": f"item {n}"} for n in range(ITEMS_MAX + 1)]}
        assert_error_shape(http.post("/add/chunks", json=many), 413, "PAYLOAD_TOO_LARGE")
        long_item = {"items": [{"text": "x" * (CHUNK_MAX_CHARS + 1)}]}
        assert_error_shape(http.post("/add/chunks", json=long_item), 413, "PAYLOAD_TOO_LARGE")
        body = {"source": "huge", "text": "y" * 500_000}
        assert_error_shape(http.post("/add/document", json=body), 413, "PAYLOAD_TOO_LARGE")
        assert http.get("/status").json()["chunks"] == 0  # nothing half-written


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/add/document", {"source": "s"}, "text"),
        ("/add/document", {"text": "x", "source": ""}, "source"),
        ("/add/document", {"text": "x", "source": "a\nb"}, "source"),
        ("/add/document", {"text": "x", "source": "s" * 513}, "source"),
        ("/add/document", {"text": "   "}, "text"),
        ("/add/document", {"text": "x", "persist": "maybe"}, "persist"),
        ("/add/document", {"text": "x", "surprise": 1}, "surprise"),
        ("/add/chunks", {"items": []}, "items"),
        ("/add/chunks", {"items": [{"text": ""}]}, "items"),
        ("/add/chunks", {"items": [{"text": " "}]}, "items"),
        ("/upsert/document", {"text": "no source"}, "source"),
        ("/upsert/document", {"source": "s"}, "text"),
        ("/chunks/update", {"new_text": "who?"}, "index"),
        ("/chunks/update", {"index": 1}, "nothing to update"),
        ("/chunks/update", {"index": -1, "new_text": "x"}, "index"),
        ("/chunks/update", {"index": 0, "new_text": ""}, "new_text"),
        ("/remove", {}, "source_prefix"),
        ("/remove", {"source_prefix": ""}, "source_prefix"),
        ("/search", {"query": "  "}, "query"),
        ("/search", {"query": "x", "top_k": 0}, "top_k"),
        ("/context", {"query": "x", "language": "fr"}, "language"),
        ("/chunks/list", {"limit": 0}, "limit"),
        ("/chunks/list", {"metadata": {"bad key": 1}}, "metadata"),
        ("/reload", {"force_rebuild": "sometimes"}, "force_rebuild"),
        # booleans are JSON's (or "true"/"false"), numbers never booleans or strings (rag_api.schema)
        ("/add/document", {"text": "x", "dynamic": 0}, "dynamic: must be true or false"),
        ("/add/document", {"text": "x", "dynamic": "no"}, "dynamic: must be true or false"),
        ("/add/document", {"text": "x", "persist": "yes"}, "persist: must be true or false"),
        ("/add/chunks", {"items": [{"text": "x"}], "persist": 1}, "persist: must be true or"),
        ("/upsert/document", {**DOC, "dynamic": "on"}, "dynamic: must be true or false"),
        ("/remove", {"source_prefix": "s", "exact": 1}, "exact: must be true or false"),
        ("/reload", {"prune": "false "}, "prune: must be true or false"),
        ("/search", {"query": "x", "top_k": "5"}, 'top_k: must be a number, not "5"'),
        ("/search", {"query": "x", "top_k": True}, "top_k: must be a number, not true"),
        ("/search", {"query": "x", "threshold": False}, "threshold: must be a number"),
        ("/chunks/list", {"limit": "10"}, "limit: must be a number"),
        ("/chunks/list", {"include_text": "1"}, "include_text: must be true or false"),
        ("/chunks/list", {"min_score": True}, "min_score: must be a number"),
        ("/chunks/update", {"index": True, "new_text": "x"}, "index: must be a number"),
        ("/chunks/update", {"source": "s", "chunk_index": "0", "new_text": "x"}, "chunk_index"),
        # metadata is a flat map of scalars and short lists of scalars (rag_api.metadata)
        ("/upsert/document", {**DOC, "metadata": {"k": nested(126)}}, "metadata: nested"),
        ("/upsert/document", {**DOC, "metadata": {"k": nested(2)}}, "metadata: key 'k'"),
        ("/upsert/document", {**DOC, "metadata": {"k": {"a": 1}}}, "a nested object"),
        ("/add/document", {**DOC, "metadata": {f"k{i}": i for i in range(65)}}, "65 keys"),
        ("/add/document", {**DOC, "metadata": {"k" * 65: 1}}, "metadata: key"),
        ("/add/document", {**DOC, "metadata": {"k\u2028": 1}}, "metadata: key"),
        ("/add/document", {**DOC, "metadata": {"k": "v" * 2049}}, "2049 characters"),
        ("/add/document", {**DOC, "metadata": {"k": list(range(65))}}, "65 items"),
        ("/add/document", {**DOC, "metadata": {f"k{i}": "v" * 300 for i in range(60)}}, "bytes"),
        ("/add/chunks", {"items": [{"text": "x", "metadata": {"k": [[1]]}}]}, "items.0.metadata"),
        ("/chunks/update", {"index": 0, "new_metadata": {"k": {"a": 1}}}, "new_metadata"),
        # values Python's JSON parser accepts but nothing downstream can hold
        ("/upsert/document", '{"source": "s", "text": "\\ud800"}', "text: contains a lone"),
        (
            "/upsert/document",
            '{"source": "s", "text": "x", "metadata": {"k": "\\udfff"}}',
            "metadata.k",
        ),
        (
            "/upsert/document",
            '{"source": "s", "text": "x", "metadata": {"\\ud800": 1}}',
            "metadata",
        ),
        (
            "/upsert/document",
            '{"source": "s", "text": "x", "metadata": {"k": NaN}}',
            "metadata.k: NaN",
        ),
        ("/add/document", '{"text": "x", "metadata": {"k": [-Infinity]}}', "metadata.k.0: NaN"),
        ("/upsert/document", {**DOC, "metadata": {"k": 2**63}}, "metadata.k: integer outside"),
        ("/chunks/update", {"index": 2**63, "new_text": "x"}, "index: integer outside"),
        ("/chunks/update", {"source": "s", "chunk_index": 2**64, "new_text": "x"}, "chunk_index"),
        ("/chunks/list", {"metadata": {"k": 2**63}}, "metadata.k: integer outside"),
        ("/chunks/list", {"metadata": {f"k{i}": 1 for i in range(65)}}, "metadata"),
        ("/search", {"query": "x", "filters": {"metadata": {f"k{i}": 1 for i in range(65)}}}, "64"),
        ("/chunks/list", {"metadata": {"k": -(2**63) - 1}}, "metadata.k: integer outside"),
        ("/search", {"query": "x", "filters": {"metadata": {"k": 2**63}}}, "filters.metadata.k"),
        ("/search", '{"query": "x", "filters": {"metadata": {"k": NaN}}}', "filters.metadata.k"),
        ("/upsert/document", {"source": "a\u0085b", "text": "x"}, "source"),
        ("/upsert/document", {"source": "a\u2028b", "text": "x"}, "source"),
        ("/add/document", {"text": "x", "source": "a\u2029b"}, "source"),
    ],
)
def test_bad_bodies_name_the_field(
    plain_server: LiveServer, path: str, body: dict | str, field: str
):
    with rag(plain_server) as http:
        before = http.get("/status").json()["chunks"]
        sent = {"json": body} if isinstance(body, dict) else {"content": body.encode()}
        error = assert_error_shape(http.post(path, **sent), 422, "INVALID_REQUEST")
        assert field in error["message"]
        assert http.get("/status").json()["chunks"] == before  # nothing written


def test_json_booleans_their_strings_and_integers_for_floats_are_taken(
    plain_server: LiveServer,
) -> None:
    with rag(plain_server) as http:
        added = http.post(
            "/add/document", json={"text": "x", "dynamic": "true", "persist": "false"}
        )
        assert added.status_code == 200, added.text
        for body in ({"query": "x", "threshold": 1}, {"query": "x", "threshold": -1, "top_k": 5}):
            assert http.post("/search", json=body).status_code == 200
        listed = http.post("/chunks/list", json={"min_score": 0, "include_text": "false"})
        assert listed.status_code == 200, listed.text
        # query strings are strings: the GET listing still reads them as before
        assert http.get("/chunks", params={"include_text": "1", "limit": "5"}).status_code == 200


def test_bad_json_and_bad_query_parameters(plain_server: LiveServer) -> None:
    with rag(plain_server) as http:
        raw = http.post(
            "/add/document", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert_error_shape(raw, 422, "INVALID_REQUEST")
        assert_error_shape(http.get("/chunks", params={"offset": -1}), 422, "INVALID_REQUEST")
        assert_error_shape(http.get("/chunks", params={"limit": "all"}), 422, "INVALID_REQUEST")
        assert_error_shape(http.get("/nowhere"), 404, "NOT_FOUND")
