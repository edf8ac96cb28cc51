"""A dead or stalled LLM upstream costs at most its configured timeouts, then the circuit opens.

The upstreams are real loopback servers: one that accepts TCP and never answers, and the
protocol-faithful fakes told to go silent after the first piece.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag_api.answering.answer import AnswerStream, answer
from rag_api.config import LLMConfig
from rag_api.hub import Hub
from rag_api.llm.generators import Generators
from rag_api.search.retrieval import Passage
from tests.conftest import hash_collection, wait_for, write_config
from tests.support.fakes import FakeOllama, FakeOpenAI
from tests.support.fakes.http import FakeServer
from tests.support.fakes.silent import SilentServer

PASSAGE = Passage("1", "faq.md", 0, 0.9, "Refunds are possible within 30 days of purchase.", {})
FIRST_TOKEN = 0.5
PROVIDERS = {
    "ollama": (
        FakeOllama,
        lambda url: {"provider": "ollama", "model": "llama3.2", "base_url": url},
    ),
    "openai": (
        FakeOpenAI,
        lambda url: {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1"},
    ),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    with SilentServer() as server:
        yield server


@pytest.fixture
def llm_hub(tmp_path: Path, make_settings, open_hub, provider: str) -> Callable[..., Hub]:
    """A hub whose `docs` collection answers with `provider` at `url`."""

    def make(url: str, timeouts: dict | None = None, **settings) -> Hub:
        llm = PROVIDERS[provider][1](url) | {
            "timeouts": {"first_token": FIRST_TOKEN, **(timeouts or {})}
        }
        config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(llm=llm)})
        return open_hub(make_settings(config, **settings))

    return make


def ask(hub: Hub) -> AnswerStream:
    result = answer(hub.generators, hub.collection("docs"), "How long for a refund?", [PASSAGE])
    result.text()
    return result


def timed(hub: Hub) -> tuple[AnswerStream, float]:
    started = time.monotonic()
    result = ask(hub)
    return result, time.monotonic() - started


def test_a_silent_upstream_costs_the_first_token_timeout_then_extractive(
    llm_hub, silent: SilentServer
) -> None:
    hub = llm_hub(silent.url)
    result, took = timed(hub)
    assert result.generator == "extractive" and "answered extractively" in result.warning
    # the configured bound, not the old 120 s: at least it, and the same order of magnitude
    assert FIRST_TOKEN <= took < 20 * FIRST_TOKEN
    assert silent.connections == 1


def test_first_piece_then_silence_ends_the_answer_as_incomplete(llm_hub, provider: str) -> None:
    fake: FakeServer = PROVIDERS[provider][0]()
    fake.reply = "Refunds are possible within thirty days."
    fake.stall_after = 1
    with fake:
        hub = llm_hub(fake.url)
        result, took = timed(hub)
    assert result.generator == provider and result.finish_reason == "error"
    assert "the answer is incomplete" in result.warning
    assert FIRST_TOKEN <= took < 20 * FIRST_TOKEN


def test_the_total_timeout_cuts_an_answer_that_trickles_forever(llm_hub, provider: str) -> None:
    fake: FakeServer = PROVIDERS[provider][0]()
    fake.reply = " ".join(f"word{i}" for i in range(2000))
    fake.token_delay = 0.01  # each pause well under first_token: only `total` can end it
    with fake:
        hub = llm_hub(fake.url, {"total": 1})
        result = ask(hub)
        assert fake.disconnected.wait(10)  # the upstream request was closed
    assert "no complete answer within 1 s" in result.warning
    assert fake.pieces_sent < fake.pieces_total


def test_the_circuit_opens_after_repeated_failures_and_stops_calling(
    llm_hub, silent: SilentServer
) -> None:
    hub = llm_hub(silent.url, llm_failures=2, llm_cooldown_s=600)
    results = [ask(hub) for _ in range(7)]
    assert silent.connections == 2  # after two failures, answered at once without calling it
    assert all(r.generator == "extractive" for r in results)
    assert all("2 failures in a row" in r.warning for r in results[2:])
    assert hub.generators.breaker(hub.collection("docs").cfg.llm).state == "open"


def test_a_probe_after_the_cooldown_closes_the_circuit_when_the_upstream_is_back(
    llm_hub, provider: str, silent: SilentServer
) -> None:
    hub = llm_hub(silent.url, llm_failures=2, llm_cooldown_s=0.5)
    ask(hub), ask(hub)
    breaker = hub.generators.breaker(hub.collection("docs").cfg.llm)
    assert breaker.state == "open"
    port = silent.port
    silent.stop()
    back: FakeServer = PROVIDERS[provider][0]()
    back.port = port  # the same server comes back
    with back:
        result = wait_for(lambda: (r := ask(hub)).generator == provider and r)
        assert result.warning is None and breaker.state == "closed"
        assert len(back.requests) == 1  # one probe, then closed
        assert ask(hub).generator == provider


def test_the_breaker_is_per_server_and_its_name_hides_credentials(make_settings, tmp_path) -> None:
    router = Generators(make_settings(tmp_path / "unused.yaml"))
    one, other = (
        LLMConfig(provider="openai", model=m, base_url="http://u:s3cret@llm:8080/v1")
        for m in ("a", "b")
    )
    assert router.breaker(one) is router.breaker(other)  # two models, one server
    assert router.breaker(one).name == "openai at http://***@llm:8080/v1"


def test_llm_timeouts_default_to_seconds_and_the_old_key_still_reads() -> None:
    llm = LLMConfig(provider="ollama", model="llama3.2")
    assert llm.timeouts.connect <= 10 and llm.timeouts.first_token <= 60
    assert llm.timeouts.total > llm.timeouts.first_token
    legacy = LLMConfig.model_validate({"provider": "ollama", "model": "x", "timeout": 90})
    assert legacy.timeouts.total == 90 and legacy.timeouts.first_token == llm.timeouts.first_token


def test_ready_and_status_show_the_circuit_without_naming_the_server(
    llm_hub, provider: str, silent: SilentServer, serve
) -> None:
    hub = llm_hub(silent.url, llm_failures=2, llm_cooldown_s=600, api_key="reader-key")
    live = serve(hub.settings, hub)
    with live.client() as http:
        assert http.get("/ready").json()["llm"] == {"docs": "closed"}
        ask(hub), ask(hub)
        ready = http.get("/ready")  # no key: the state, never the server's address
        assert ready.status_code == 200 and ready.json()["llm"] == {"docs": "open"}
        assert f":{silent.port}" not in ready.text
        status = http.get("/v1/rag/status", headers={"Authorization": "Bearer reader-key"})
    llm = status.json()["llm"]
    assert llm["provider"] == provider and llm["model"] == hub.collection("docs").cfg.llm.model
    assert llm["circuit"]["state"] == "open" and llm["circuit"]["failures"] == 2
    assert 0 < llm["circuit"]["retry_in_s"] <= 600


def test_the_warnings_speak_the_collections_language(tmp_path: Path, make_settings, open_hub):
    llm = {"provider": "ollama", "model": "llama3.2", "base_url": "http://127.0.0.1:9"}
    entry = hash_collection(language="es", llm=llm)
    hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": entry})))
    passage = Passage("1", "faq.md", 0, 0.9, "Los reembolsos se aceptan durante 30 días.", {})
    result = answer(hub.generators, hub.collection("docs"), "¿Hay reembolsos?", [passage])
    text = result.text()
    assert text.startswith("El modelo de lenguaje no está disponible")
    assert result.warning.startswith("El modelo de lenguaje falló (Ollama at")
    assert result.warning.endswith("la respuesta cita los fragmentos recuperados")


def test_an_answer_cut_short_is_said_in_the_answers_language(
    tmp_path: Path, make_settings, open_hub
) -> None:
    """`auto` may answer in another language than the answering collection's: the warning follows
    the answer's."""
    with FakeOllama() as fake:
        fake.reply, fake.stall_after = "Los reembolsos se aceptan.", 1
        llm = {"provider": "ollama", "model": "llama3.2", "base_url": fake.url}
        llm["timeouts"] = {"first_token": FIRST_TOKEN}
        entry = hash_collection(language="en", llm=llm)
        hub = open_hub(make_settings(write_config(tmp_path / "c.yaml", {"docs": entry})))
        result = answer(
            hub.generators, hub.collection("docs"), "¿Reembolsos?", [PASSAGE], language="es"
        )
        result.text()
    assert result.warning.endswith("la respuesta está incompleta"), result.warning
