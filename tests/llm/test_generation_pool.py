"""Generation never starves the rest: with more stuck LLM requests than the server has request
threads, /health, /ready and retrieval-only calls still answer, and only RAG_MAX_GENERATIONS
requests reach the LLM at once."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api.settings import Settings
from tests.conftest import LiveServer, hash_collection, wait_for, write_config
from tests.support.fakes.silent import SilentServer
from tests.support.openai_support import REFUND, start_indexed, write_kb

STUCK = 45  # more than the 40 worker threads that sync routes share
SLOTS = 2


@pytest.fixture
def stuck_llm(tmp_path: Path) -> Iterator[tuple[SilentServer, LiveServer]]:
    """A live server whose LLM accepts connections and never answers (first_token: 10 min)."""
    silent = SilentServer().start()
    llm = {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_url": silent.url + "/v1",
        "timeouts": {"first_token": 600},
    }
    config = write_config(
        tmp_path / "c.yaml", {"docs": hash_collection(write_kb(tmp_path / "kb"), llm=llm)}
    )
    settings = Settings(
        config=config, data_dir=tmp_path / "data", qdrant_url=":memory:", max_generations=SLOTS
    )
    hub, live = start_indexed(settings, "docs")
    yield silent, live
    silent.stop()
    live.stop()
    hub.close()


def generate(live: LiveServer, n: int) -> Any:
    """One generating request: /query, a chat completion, or a streamed one, by turns."""
    messages = [{"role": "user", "content": REFUND}]
    with httpx.Client(base_url=live.url, timeout=900) as http:
        if n % 3 == 0:
            return http.post("/query/docs", json={"query": REFUND}).json()["generator"]
        if n % 3 == 1:
            chat = {"model": "docs", "messages": messages}
            return http.post("/v1/chat/completions", json=chat).json()["generator"]
        chat = {"model": "docs", "messages": messages, "stream": True}
        with http.stream("POST", "/v1/chat/completions", json=chat) as response:
            return "extractive" if '"generator":"extractive"' in response.read().decode() else None


def test_health_ready_and_retrieval_answer_while_generations_are_stuck(stuck_llm) -> None:
    silent, live = stuck_llm
    with ThreadPoolExecutor(STUCK) as pool:
        pending = [pool.submit(generate, live, n) for n in range(STUCK)]
        wait_for(lambda: silent.connections >= SLOTS)
        with live.client() as http:
            assert http.get("/health").json() == {"status": "ok"}
            assert http.get("/ready").status_code == 200
            query = http.post("/query/docs", json={"query": REFUND, "generate": False})
            assert query.json()["sources"][0]["source"] == "billing.md"
            context = http.post("/v1/rag/context", json={"query": REFUND})
            assert context.status_code == 200 and "30 days" in context.text
        assert not any(request.done() for request in pending)  # all still wait on the LLM
        assert silent.connections == SLOTS  # the others wait their turn without calling it
        silent.stop()  # the LLM goes away: every request answers extractively
        assert [request.result() for request in pending] == ["extractive"] * STUCK
