"""The hub as the composition root (rag_api.hub): it owns every long-lived service, per hub, and
closes them in one place; the app keeps the hub and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.http.app import create_app
from rag_api.kbadmin.models import Reload, Reloaded, Search, SearchResults
from tests.conftest import hash_collection, write_config

SERVER = {"provider": "http", "model": "bge-reranker", "base_url": "http://127.0.0.1:9/v1"}


def config(tmp_path: Path, **entry: object) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir(exist_ok=True)
    (kb / "faq.md").write_text("# Refunds\n\nRefunds are possible within 30 days.\n")
    (kb / "shipping.md").write_text("# Shipping\n\nParcels leave the warehouse on Mondays.\n")
    return write_config(tmp_path / "collections.yaml", {"docs": hash_collection(kb, **entry)})


def test_each_hub_keeps_its_own_breaker_thresholds(tmp_path, make_settings, open_hub) -> None:
    """Two hubs in one process: each rerank server's breaker takes its own hub's settings (a
    process-wide setting made the last hub opened decide for both)."""
    path = config(tmp_path, rerank=SERVER)
    strict = open_hub(make_settings(path, llm_failures=1, data_dir=tmp_path / "a"))
    patient = open_hub(make_settings(path, llm_failures=7, data_dir=tmp_path / "b"))
    rerank = strict.collections["docs"].cfg.rerank
    assert rerank is not None
    assert strict.rerankers.server(rerank).breaker.threshold == 1
    assert patient.rerankers.server(rerank).breaker.threshold == 7
    assert strict.rerankers.server(rerank) is not patient.rerankers.server(rerank)


def test_the_app_keeps_the_hub_and_nothing_else(tmp_path, make_settings) -> None:
    app = create_app(make_settings(config(tmp_path)))
    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        assert set(vars(app.state)["_state"]) == {"hub"}
        hub = app.state.hub
        assert hub.uploads is not None  # started with the app
    assert app.state.hub is None  # and gone with it


def test_close_stops_what_the_hub_started(tmp_path, make_settings, open_hub) -> None:
    hub = open_hub(make_settings(config(tmp_path))).start(watch=True)
    watcher = hub.watcher
    assert watcher is not None and watcher.status()["running"]
    hub.close()
    assert hub.watcher is None and hub.uploads is None
    assert not watcher.status()["running"]
    with pytest.raises(RuntimeError):  # the fan-out pool of `auto` is shut down
        hub.fanout.submit(print)


def test_the_surfaces_calls_answer_their_declared_models(tmp_path, make_settings, open_hub) -> None:
    hub = open_hub(make_settings(config(tmp_path)))
    reloaded = hub.kb.reload(Reload())
    assert isinstance(reloaded, Reloaded) and reloaded.indexed == 2
    found = hub.kb.search(Search(query="How long for refunds?"))
    assert isinstance(found, SearchResults) and found.results[0].source == "faq.md"
    answer = hub.query.ask("docs", QueryBody(query="How long for refunds?"))
    assert isinstance(answer, QueryAnswer) and "30 days" in (answer.answer or "")
