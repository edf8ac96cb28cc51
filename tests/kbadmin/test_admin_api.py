"""/v1/rag/* on a live server with the hash embedder: routing, listings, edits of kb-file chunks,
auth, and an embedder outage mid-write (limits and bad input: test_admin_bad_input.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer, assert_error_shape, hash_collection, write_config
from tests.kbadmin.conftest import DOC, rag
from tests.support.fakes import FakeOllama


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "faq.md").write_text(
        "# Refunds\n\nRefunds are possible within 30 days of purchase.\n\n"
        "# Support\n\nSupport answers on weekdays from nine to six.\n"
    )
    (root / "policy.txt").write_text("Invoices are kept for six years.")
    return root


@pytest.fixture
def hub_server(tmp_path: Path, kb: Path, engine: str, make_settings, serve) -> LiveServer:
    config = write_config(
        tmp_path / "c.yaml",
        {
            "docs": hash_collection(kb, chunking={"size": 64, "overlap": 8}),
            "notes": hash_collection(language="it"),
            "off": hash_collection(enabled=False),
        },
    )
    return serve(make_settings(config, engine))


def test_collection_routing(hub_server: LiveServer) -> None:
    with rag(hub_server) as http:
        note = {"source": "n1", "text": "appunti della riunione"}
        assert http.post("/add/document", json={**note, "collection": "notes"}).status_code == 200
        assert http.post("/add/document?collection=notes", json=note).status_code == 200
        assert http.get("/sources", params={"collection": "notes"}).json()["items"] == [
            {"source": "n1", "chunk_count": 2, "has_dynamic": True}
        ]
        assert http.get("/sources").json() == {"count": 0, "items": []}  # default: docs
        context = http.post("/context", json={"query": "riunione", "collection": "notes"}).json()
        assert context["block"].startswith(
            "Frammenti rilevanti recuperati dalla base di conoscenza:"
        )
        assert http.get("/status", params={"collection": "notes"}).json()["chunks"] == 2
        for response in (
            http.get("/status", params={"collection": "nope"}),
            http.post("/search", json={"query": "x", "collection": "nope"}),
            http.post("/remove?collection=nope", json={"source_prefix": "x"}),
        ):
            assert_error_shape(response, 404, "COLLECTION_NOT_FOUND")
        for response in (
            http.get("/status", params={"collection": "off"}),
            http.get("/chunks", params={"collection": "off"}),
            http.post("/add/document", json={**note, "collection": "off"}),
            http.post("/context", json={"query": "x", "collection": "off"}),
        ):
            assert_error_shape(response, 503, "RAG_NOT_ENABLED")
        clash = http.post("/search?collection=docs", json={"query": "x", "collection": "notes"})
        assert "collection" in assert_error_shape(clash, 422, "INVALID_REQUEST")["message"]


def test_listing_order_paging_and_stable_index(hub_server: LiveServer) -> None:
    with rag(hub_server) as http:
        http.post("/reload", json={})
        items = [
            {"text": f"order {n} shipped to customer {n}", "source": f"o/{n}"} for n in range(6)
        ]
        http.post("/add/chunks", json={"items": items})
        everything = http.get("/chunks", params={"limit": 100}).json()
        indexes = [item["index"] for item in everything["items"]]
        assert indexes == sorted(indexes) and len(set(indexes)) == everything["total"] == 9
        page = http.get("/chunks", params={"source_prefix": "o/", "limit": 2, "offset": 2}).json()
        assert [i["source"] for i in page["items"]] == ["o/2", "o/3"] and page["total"] == 6
        assert "text" not in http.get("/chunks", params={"include_text": False}).json()["items"][0]
        # deleting other chunks does not move an index: it still names the same chunk
        target = next(i for i in everything["items"] if i["source"] == "o/4")
        assert http.post("/remove", json={"source_prefix": "o/1", "exact": True}).json() == {
            "removed": 1,
            "total_after": 8,
        }
        changed = http.post("/chunks/update", json={"index": target["index"], "new_text": "moved"})
        assert changed.json()["chunk"]["source"] == "o/4"
        ranked = http.post(
            "/chunks/list", json={"query": "order 5 shipped", "source_prefix": "o/", "limit": 1}
        ).json()
        assert ranked["items"][0]["source"] == "o/5" and ranked["total"] == 5
        filtered = http.post("/chunks/list", json={"metadata": {"missing": True}}).json()
        assert filtered["total"] == 0 and filtered["items"] == []


def test_a_whole_number_past_64_bits_filters_as_a_number(hub_server: LiveServer) -> None:
    """A metadata filter such as 1e308 (a whole float, but no 64-bit integer) crashed every
    filtered read with a 500; it is compared as a number: it finds the chunk storing it, only."""
    with rag(hub_server) as http:
        stored = http.post("/upsert/document", json={**DOC, "metadata": {"x": 1e308, "n": 2}})
        assert stored.status_code == 200, stored.text
        for value, found in ((1e308, ["s"]), (1e300, []), (-1e308, []), (2.0, [])):
            where = {"x": value}
            search = {"query": "document", "threshold": -1, "filters": {"metadata": where}}
            for path, body, key in (
                ("/search", search, "results"),
                ("/chunks/list", {"metadata": where}, "items"),
            ):
                answer = http.post(path, json=body)
                assert answer.status_code == 200, (path, value, answer.text)
                assert [hit["source"] for hit in answer.json()[key]] == found, (path, value)
        query = {"query": "document", "threshold": -1, "filters": {"metadata": {"x": 1e308}}}
        answer = httpx.post(f"{hub_server.url}/query/docs", json=query, timeout=60)
        assert answer.status_code == 200, answer.text
        assert [hit["source"] for hit in answer.json()["sources"]] == ["s"]


def test_kb_file_chunks_are_editable_until_the_next_reload(hub_server: LiveServer) -> None:
    with rag(hub_server) as http:
        http.post("/reload", json={})
        before = http.get("/chunks", params={"source_exact": "faq.md"}).json()["items"]
        assert len(before) == 2 and before[0]["origin"] == "file"
        assert before[0]["is_dynamic"] is False
        edited = http.post(
            "/chunks/update", json={"index": before[0]["index"], "new_text": "EDITED"}
        )
        assert edited.json()["chunk"]["text"] == "EDITED"
        upsert = http.post("/upsert/document", json={"source": "faq.md", "text": "api doc"}).json()
        assert upsert["removed"] == 0  # /upsert owns API chunks only: the file's stay
        assert (
            http.post("/upsert/document", json={"source": "faq.md", "text": ""}).json()["removed"]
            == 1
        )
        moved = {"index": before[1]["index"], "new_source": "moved.md"}
        assert http.post("/chunks/update", json=moved).status_code == 200
        taken = {"source": "faq.md", "chunk_index": 0, "new_source": "policy.txt"}
        assert_error_shape(http.post("/chunks/update", json=taken), 409, "CHUNK_EXISTS")
        reload = http.post("/reload", json={}).json()
        assert reload["indexed"] == 1 and reload["unchanged"] == 1  # the edited file only
        after = http.get("/chunks", params={"source_exact": "faq.md"}).json()["items"]
        assert [i["text"] for i in after] == [i["text"] for i in before]
        assert after[0]["index"] == before[0]["index"]  # edited in place: same chunk, same index
        assert "moved.md" not in {i["source"] for i in http.get("/sources").json()["items"]}


def test_reload_restores_kb_chunks_removed_through_the_api(hub_server: LiveServer) -> None:
    """A kb file whose chunks were moved away and removed, or removed by source, is re-indexed by
    /reload although the chunks still stored carry the file's current content hash."""
    kb = Path(hub_server.hub.collection("docs").kb_path)
    (kb / "lines.jsonl").write_text(
        '{"source": "a", "text": "Alpha line about invoices."}\n'
        '{"source": "b", "text": "Beta line about refunds."}\n'
    )
    with rag(hub_server) as http:
        http.post("/reload", json={})
        before = http.get("/chunks", params={"source_exact": "faq.md"}).json()["items"]
        moved = {"index": before[1]["index"], "new_source": "moved.md"}
        assert http.post("/chunks/update", json=moved).status_code == 200
        assert http.post("/remove", json={"source_prefix": "moved.md"}).json()["removed"] == 1
        assert http.post("/remove", json={"source_prefix": "b"}).json()["removed"] == 1
        reload = http.post("/reload", json={}).json()
        assert reload["indexed"] == 2 and reload["unchanged"] == 1, reload
        after = http.get("/chunks", params={"source_exact": "faq.md"}).json()["items"]
        assert [i["text"] for i in after] == [i["text"] for i in before]
        sources = {i["source"] for i in http.get("/sources").json()["items"]}
        assert {"a", "b"} <= sources and "moved.md" not in sources
        assert http.post("/reload", json={}).json()["unchanged"] == 3  # and then it is current


@pytest.mark.parametrize("engine", ["edge"])
def test_auth_on(tmp_path: Path, kb: Path, engine: str, make_settings, serve) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})
    server = serve(make_settings(config, engine, api_key="reader", admin_api_key="admin"))
    write = {"url": "/add/document", "json": {"text": "secret plan", "source": "s"}}
    read = {"url": "/search", "json": {"query": "plan"}}
    with rag(server) as anonymous:
        assert_error_shape(anonymous.post(**write), 401, "UNAUTHORIZED")
        assert_error_shape(anonymous.post(**read), 401, "UNAUTHORIZED")
        assert_error_shape(anonymous.get("/status"), 401, "UNAUTHORIZED")
    with rag(server, headers={"Authorization": "Bearer reader"}) as reader:
        assert_error_shape(reader.post(**write), 403, "FORBIDDEN")
        for path, body in [
            ("/upsert/document", {"source": "s", "text": ""}),
            ("/chunks/update", {"index": 0, "new_text": "x"}),
            ("/add/chunks", {"items": [{"text": "x"}]}),
            ("/remove", {"source_prefix": "s"}),
            ("/reload", {}),
        ]:
            assert_error_shape(reader.post(path, json=body), 403, "FORBIDDEN")
        assert reader.post(**read).status_code == 200 and reader.get("/sources").status_code == 200
    hub_reads = [
        ("POST", "/query/docs", {"query": "plan", "generate": False}),
        ("GET", "/collections", None),
    ]
    for method, path, body in hub_reads:
        refused = httpx.request(method, server.url + path, json=body)
        assert_error_shape(refused, 401, "UNAUTHORIZED")
        allowed = httpx.request(
            method, server.url + path, json=body, headers={"Authorization": "Bearer reader"}
        )
        assert allowed.status_code == 200
    with rag(server, headers={"Authorization": "Bearer admin"}) as admin:
        assert admin.post(**write).json()["added"] == 1
        assert admin.post(**read).json()["count"] == 1
        assert admin.get("/chunks").json()["total"] == 1


def test_auth_off_opens_everything(plain_server: LiveServer) -> None:
    with rag(plain_server) as http:
        body = {"source": "auth-off", "text": "Anyone may write while no key is set: albatross."}
        written = http.post("/add/document", json=body)
        assert written.status_code == 200, written.text
        assert written.json()["added"] == 1 and written.json()["sources"] == ["auth-off"]
        # stored, and readable by anyone: listed, whole, and found by a search
        sources = {item["source"]: item for item in http.get("/sources").json()["items"]}
        assert sources["auth-off"]["chunk_count"] == 1
        chunks = http.get("/chunks", params={"source_exact": "auth-off", "include_text": True})
        assert [c["text"] for c in chunks.json()["items"]] == [body["text"]]
        hits = http.post("/search", json={"query": "albatross"}).json()
        assert "auth-off" in [hit["source"] for hit in hits["results"]]
        assert http.get("/status").status_code == 200


@pytest.mark.parametrize("engine", ["edge"])
def test_embedder_outage_keeps_the_old_version(
    tmp_path: Path, engine: str, fake_ollama: FakeOllama, make_settings, serve
) -> None:
    # no retries: the first 500 gives up (retries: tests/embedding/test_embedding_server.py)
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768, "retry_wait_s": 0}
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(embedder=embedder)})
    server = serve(make_settings(config, engine, ollama_url=fake_ollama.url))
    with rag(server) as http:
        v1 = {"source": "doc", "text": "version one of the document. " * 12}
        assert http.post("/upsert/document", json=v1).status_code == 200
        before = http.get("/chunks", params={"source_exact": "doc"}).json()["items"]
        index = before[0]["index"]
        v2 = {"source": "doc", "text": "version two, rewritten. " * 12}
        fake_ollama.fail(500, times=3, path="/api/embed")
        for path, body in [
            ("/upsert/document", v2),
            ("/add/document", v2),
            ("/chunks/update", {"index": index, "new_text": "changed text"}),
        ]:
            assert_error_shape(http.post(path, json=body), 503, "EMBEDDER_UNAVAILABLE")
        fake_ollama.stop()
        error = assert_error_shape(
            http.post("/upsert/document", json=v2), 503, "EMBEDDER_UNAVAILABLE"
        )
        assert "Ollama" in error["message"]
        assert_error_shape(
            http.post("/search", json={"query": "version"}), 503, "EMBEDDER_UNAVAILABLE"
        )
        assert http.get("/chunks", params={"source_exact": "doc"}).json()["items"] == before
        fake_ollama.start()
        http.post("/upsert/document", json=v2)
        after = http.get("/chunks", params={"source_exact": "doc"}).json()["items"]
        assert after and all("version two" in item["text"] for item in after)
