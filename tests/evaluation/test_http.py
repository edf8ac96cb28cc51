"""POST /v1/collections/{collection}/eval on a live server: the reader key, the one error shape,
the time bound; drafted questions; and `rag-hub eval` going through the server that owns the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_api.evaluation.generate import WARNING
from rag_api.indexing.sync import sync_collection
from tests.conftest import assert_error_shape, hash_collection, run_cli, write_config
from tests.evaluation.world import code_questions, write_codes_kb

READER, ADMIN = "reader-secret", "admin-secret"
PATH = "/v1/collections/codes/eval"


def start(tmp_path: Path, make_settings, serve, **overrides):
    kb = write_codes_kb(tmp_path / "kb")
    config = write_config(tmp_path / "collections.yaml", {"codes": hash_collection(kb)})
    settings = make_settings(config, api_key=READER, admin_api_key=ADMIN, **overrides)
    server = serve(settings)
    sync_collection(server.hub.collection("codes"))
    return server, settings


def test_the_route_needs_the_reader_key_and_answers_the_table(
    tmp_path: Path, make_settings, serve
) -> None:
    server, _ = start(tmp_path, make_settings, serve)
    body = {"questions": code_questions(), "modes": ["sparse", "hybrid"], "k": 5}
    with server.client() as http:
        assert_error_shape(http.post(PATH, json=body), 401, "UNAUTHORIZED")
        wrong = {"Authorization": "Bearer nope"}
        assert_error_shape(http.post(PATH, json=body, headers=wrong), 401, "UNAUTHORIZED")
        for key in (READER, ADMIN):
            answer = http.post(PATH, json=body, headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 200, answer.text
        document = answer.json()
    assert document["questions"] == 24 and document["k"] == 5
    assert [row["label"] for row in document["rows"]] == ["sparse", "hybrid/rrf", "hybrid/dbsf"]
    sparse = document["rows"][0]
    assert sparse["ndcg@10"] == 1.0 and sparse["recall@5"] == 1.0 and sparse["p50_ms"] > 0
    assert document["unknown_sources"] == [] and "tune" not in document


def test_bad_bodies_and_the_time_bound_answer_in_the_one_shape(
    tmp_path: Path, make_settings, serve
) -> None:
    server, _ = start(tmp_path, make_settings, serve, eval_max_s=0.001)
    auth = {"Authorization": f"Bearer {READER}"}
    with server.client(headers=auth) as http:
        both = {"questions": code_questions(), "generate": 3}
        assert_error_shape(http.post(PATH, json=both), 422, "INVALID_REQUEST")
        bad = {"questions": [{"question": "x", "sources": "a", "typo": 1}]}
        error = assert_error_shape(http.post(PATH, json=bad), 422, "INVALID_REQUEST")
        assert "line 1: unknown field(s) typo" in error["message"]
        missing = http.post("/v1/collections/nope/eval", json={"questions": code_questions()})
        assert_error_shape(missing, 404, "COLLECTION_NOT_FOUND")
        slow = http.post(PATH, json={"questions": code_questions() * 20, "tune": True})
        error = assert_error_shape(slow, 413, "EVAL_TOO_LONG")
        assert "RAG_EVAL_MAX_S" in error["message"]


def test_generated_questions_are_deterministic_and_say_they_flatter(
    tmp_path: Path, make_settings, serve
) -> None:
    server, _ = start(tmp_path, make_settings, serve)
    with server.client(headers={"Authorization": f"Bearer {READER}"}) as http:
        first = http.post(PATH, json={"generate": 5}).json()
        again = http.post(PATH, json={"generate": 5}).json()
    assert first["generated"] == again["generated"] and len(first["generated"]) == 5
    assert first["warning"] == WARNING and "flatter" in WARNING
    sources = [q["sources"][0] for q in first["generated"]]
    assert len(set(sources)) == 5  # spread over the collection, not its first chunks
    for drafted in first["generated"]:
        assert drafted["answer"] and drafted["question"].endswith("?")


@pytest.mark.slow
def test_the_cli_goes_through_the_server_that_owns_the_store(
    tmp_path: Path, make_settings, serve
) -> None:
    server, settings = start(tmp_path, make_settings, serve)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in code_questions()[:4]))
    env = {
        "RAG_CONFIG": str(settings.config),
        "RAG_DATA_DIR": str(settings.data_dir),
        "RAG_API_KEY": READER,
    }
    done = run_cli("eval", "codes", str(questions), "--modes", "sparse", env=env)
    assert done.returncode == 0, done.stderr
    assert "codes: 4 questions (4 in scope), configured hybrid/dbsf" in done.stdout
    assert "  sparse           1.000" in done.stdout
    drafts = tmp_path / "drafts.jsonl"
    generated = run_cli("eval", "codes", str(drafts), "--generate", "3", env=env)
    assert generated.returncode == 0, generated.stderr
    assert "flatter the scores" in generated.stdout
    assert len(drafts.read_text().splitlines()) == 3
    refused = run_cli("eval", "codes", str(drafts), "--generate", "3", env=env)
    assert refused.returncode == 2 and "exists" in refused.stderr
