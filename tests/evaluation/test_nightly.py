"""`eval:` in collections.yaml: every `rag-hub check` measures the collection on the file, records
the result under RAG_DATA_DIR, and reports a finding when nDCG@10 fell by more than the margin."""

from __future__ import annotations

import json
from pathlib import Path

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.run import run_check
from tests.conftest import hash_collection, run_cli, write_config
from tests.evaluation.world import code_questions, write_codes_kb


def test_a_drop_since_the_last_check_is_a_finding(tmp_path: Path, make_settings) -> None:
    kb = write_codes_kb(tmp_path / "kb")
    (tmp_path / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in code_questions())
    )
    entry = hash_collection(kb, retrieval={"mode": "sparse"}, eval="questions.jsonl")
    config = write_config(tmp_path / "collections.yaml", {"codes": entry})
    settings = make_settings(config)
    hub = Hub.open(settings)
    try:
        collection = hub.collection("codes")
        sync_collection(collection)
        first = run_check(hub, sample=0).results[0]
        assert first.findings == []  # the first run only records
        record = json.loads((settings.data_dir / "eval" / "codes.json").read_text())
        assert record["ndcg@10"] == 1.0 and record["settings"]["mode"] == "sparse"
        assert run_check(hub, sample=0).results[0].findings == []  # no change, no finding

        # a bad import: the codes are gone from the texts
        jsonl = kb / "errors.jsonl"
        lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
        jsonl.write_text(
            "".join(json.dumps({**line, "text": "An error happened."}) + "\n" for line in lines)
        )
        sync_collection(collection)
        (finding,) = run_check(hub, sample=0).results[0].findings
    finally:
        hub.close()
    assert (finding.check, finding.severity) == ("eval", "error")
    assert "ndcg@10 on questions.jsonl fell from 1.0000" in finding.detail
    assert "RAG_EVAL_MARGIN 0.05" in finding.detail


def test_a_missing_eval_file_is_reported(tmp_path: Path, make_settings) -> None:
    kb = write_codes_kb(tmp_path / "kb")
    entry = hash_collection(kb, eval="nowhere.jsonl")
    settings = make_settings(write_config(tmp_path / "collections.yaml", {"codes": entry}))
    hub = Hub.open(settings)
    try:
        sync_collection(hub.collection("codes"))
        (finding,) = run_check(hub, sample=0).results[0].findings
    finally:
        hub.close()
    assert finding.check == "eval" and "question file not found" in finding.detail


def test_config_check_reads_the_eval_file(tmp_path: Path) -> None:
    kb = write_codes_kb(tmp_path / "kb")
    config = write_config(
        tmp_path / "collections.yaml", {"codes": hash_collection(kb, eval="questions.jsonl")}
    )
    missing = run_cli("config", "check", env={"RAG_CONFIG": str(config)})
    assert missing.returncode == 1
    assert "error: codes: eval: " in missing.stdout and "question file not found" in missing.stdout
    (tmp_path / "questions.jsonl").write_text('{"question": "E4471?", "sources": ["x"]}\n')
    assert run_cli("config", "check", env={"RAG_CONFIG": str(config)}).returncode == 0
