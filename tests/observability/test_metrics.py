"""GET /metrics: prometheus_client's exposition, parsed by its own parser; counters move; no secrets."""

from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import assert_error_shape, free_port, hash_collection, write_config


def scrape(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_stages_embeddings_and_points_are_counted(tmp_path: Path, make_settings, serve):
    strict = hash_collection(retrieval={"threshold": 0.99})  # nothing passes: no-evidence answer
    config = write_config(
        tmp_path / "collections.yaml", {"notes": hash_collection(), "strict": strict}
    )
    client = serve(make_settings(config)).client()
    before = scrape(client)

    for source, text in [("a.md", "Starlings flock at dusk."), ("b.md", "Herons fish at dawn.")]:
        body = {"collection": "notes", "source": source, "text": text}
        assert client.post("/v1/rag/add/document", json=body).status_code == 200
    for question in ("starlings", "starlings at dusk", "starlings"):  # a repeat is not re-embedded
        assert client.post("/query/notes", json={"query": question}).status_code == 200
    assert client.post("/query/strict", json={"query": "starlings"}).status_code == 200
    assert client.get("/no/such/page").status_code == 404
    after = scrape(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    query = {"route": "/query/{collection}", "method": "POST", "status": "2xx"}
    assert moved("rag_http_requests_total", **query) == 4
    unmatched = {"route": "<unmatched>", "method": "GET", "status": "4xx"}
    assert moved("rag_http_requests_total", **unmatched) == 1
    route = {"route": "/query/{collection}"}
    assert moved("rag_http_request_duration_seconds_count", **route, collection="notes") == 3
    assert moved("rag_http_request_duration_seconds_count", **route, collection="strict") == 1
    for stage in ("embed", "store"):
        labels = {"stage": stage, "collection": "notes"}
        assert moved("rag_retrieval_stage_duration_seconds_count", **labels) == 3
    generate = {"stage": "generate", "collection": "notes"}
    assert moved("rag_retrieval_stage_duration_seconds_count", **generate) == 3
    assert (
        moved("rag_embeddings_total", provider="hash", kind="query") == 2
    )  # strict is empty: no search
    assert moved("rag_embeddings_total", provider="hash", kind="document") == 2
    assert (
        moved("rag_embedding_duration_seconds_count", provider="hash", kind="query") == 2
    )  # strict is empty: no search
    assert moved("rag_no_evidence_answers_total", collection="strict") == 1
    assert moved("rag_no_evidence_answers_total", collection="notes") == 0
    assert value(after, "rag_store_points", collection="notes") == 2
    assert value(after, "rag_indexer_up") == 0
    assert value(after, "process_cpu_seconds_total") > 0


def test_llm_failures_and_extractive_fallbacks(tmp_path: Path, make_settings, serve):
    llm = {"provider": "ollama", "model": "llama3", "timeout": 5}
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection(llm=llm)})
    settings = make_settings(config, ollama_url=f"http://127.0.0.1:{free_port()}")  # nobody there
    client = serve(settings).client()
    body = {"collection": "notes", "source": "a.md", "text": "Starlings flock at dusk."}
    assert client.post("/v1/rag/add/document", json=body).status_code == 200
    before = scrape(client)

    answer = client.post("/query/notes", json={"query": "starlings"}).json()
    assert answer["generator"] == "extractive" and "warning" in answer
    after = scrape(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("rag_llm_calls_total", provider="ollama") == 1
    assert moved("rag_llm_failures_total", provider="ollama") == 1
    assert moved("rag_llm_fallbacks_total", collection="notes") == 1
    assert value(after, "rag_llm_circuit_state", collection="notes", state="closed") == 1
    assert value(after, "rag_llm_circuit_state", collection="notes", state="open") == 0


def test_metrics_need_the_reader_key_unless_public_and_hold_no_secret(
    tmp_path: Path, make_settings, serve
):
    config = write_config(tmp_path / "collections.yaml", {"notes": hash_collection()})
    secrets = {
        "api_key": "reader-secret-4711",
        "admin_api_key": "admin-secret-0815",
        "ollama_url": "http://ollama-user:ollama-secret-42@127.0.0.1:9/",
    }
    server = serve(make_settings(config, **secrets))
    anonymous, reader = server.client(), server.client(headers={"X-Request-ID": "r1"})
    reader.headers["Authorization"] = "Bearer reader-secret-4711"
    assert_error_shape(anonymous.get("/metrics"), 401, "UNAUTHORIZED")
    reader.post("/query/notes", json={"query": "secret"})
    text = reader.get("/metrics").text
    assert "rag_http_requests_total" in text
    for secret in ("reader-secret-4711", "admin-secret-0815", "ollama-secret-42", "ollama-user"):
        assert secret not in text

    public = make_settings(config, "memory", metrics_public=True, api_key="reader-secret-4711")
    open_server = serve(public).client()
    assert "rag_http_requests_total" in open_server.get("/metrics").text
    assert_error_shape(open_server.post("/query/notes", json={"query": "x"}), 401, "UNAUTHORIZED")
