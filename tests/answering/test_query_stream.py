"""POST /query/{collection} with `stream: true`: sources first, the answer in pieces, then done —
the same retrieval and answer as the plain request."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from rag_api.indexing.sync import sync_collection
from tests.conftest import assert_error_shape, hash_collection, write_config


def events(response: httpx.Response) -> list[tuple[str, dict]]:
    """(event, data) of each server-sent event."""
    found = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            found.append((lines.get("event", "message"), json.loads(lines["data"])))
    return found


def test_the_streamed_answer_is_the_plain_answer_in_pieces(
    tmp_path: Path, make_settings, serve
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text("## Refunds\n\nRefunds are possible within 30 days of purchase.\n")
    (kb / "parking.md").write_text("## Parking\n\nVisitors park on level one of the garage.\n")
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb)})
    server = serve(make_settings(config))
    sync_collection(server.hub.collection("docs"))
    ask = {"query": "How many days for a refund?", "mode": "hybrid", "top_k": 2}
    with server.client() as http:
        plain = http.post("/query/docs", json=ask).json()
        streamed = http.post("/query/docs", json={**ask, "stream": True})
        assert streamed.headers["content-type"].startswith("text/event-stream")
        got = events(streamed)
        kinds = [kind for kind, _ in got]
        assert kinds[0] == "sources" and kinds[-1] == "done"
        assert set(kinds[1:-1]) == {"delta"} and len(kinds) > 3  # more than one piece
        head, done = got[0][1], got[-1][1]
        assert head["sources"] == plain["sources"] and head["sources"][0]["source"] == "faq.md"
        assert {"dense_score", "dense_rank", "sparse_score", "sparse_rank"} <= set(
            head["sources"][0]
        )
        assert (head["collection"], head["mode"], head["generator"]) == (
            "docs",
            "hybrid",
            "extractive",
        )
        assert "".join(data["text"] for kind, data in got if kind == "delta") == plain["answer"]
        assert done["usage"] == plain["usage"] and done["timings_ms"]["total"] > 0

        nothing = events(
            http.post("/query/docs", json={"query": "refund", "stream": True, "sources": ["no.md"]})
        )
        assert nothing[0][1]["sources"] == [] and nothing[0][1]["generator"] == "none"
        assert nothing[-1][1]["generator"] == "none"

        retrieval = events(
            http.post("/query/docs", json={**ask, "stream": True, "generate": False})
        )
        assert [kind for kind, _ in retrieval] == ["sources", "done"]
        assert retrieval[0][1]["sources"] == plain["sources"]

        missing = http.post("/query/nope", json={"query": "x", "stream": True})
        assert_error_shape(missing, 404, "COLLECTION_NOT_FOUND")  # before any event
