"""A collection's llm block caps what clients send: the token limit lowered to its `max_tokens`
(never raised), and each other generation parameter allowed, fixed or refused by name."""

from __future__ import annotations

import httpx
import openai
import pytest

from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import REFUND, ask, start_indexed, write_kb

LLM_LIMITS = {"max_tokens": 100, "temperature": 0.3}
RULES = {"temperature": "fix", "top_p": "fix", "seed": "refuse", "stop": "refuse"}


@pytest.fixture(scope="module")
def capped(tmp_path_factory, upstreams):
    """`capped` answered by the fake OpenAI-compatible server, with the limits above."""
    _, relay = upstreams
    relay.reply = "You have 30 days to ask for a refund [1]."
    root = tmp_path_factory.mktemp("capped")
    llm = {"provider": "openai", "model": "gpt-4o-mini", "base_url": relay.url + "/v1"}
    entry = hash_collection(
        write_kb(root / "kb"), llm={**llm, **LLM_LIMITS, "client_params": RULES}
    )
    config = write_config(root / "collections.yaml", {"capped": entry})
    settings = Settings(config=config, data_dir=root / "data", qdrant_url=":memory:")
    hub, live = start_indexed(settings, "capped")
    yield live, relay
    live.stop()
    hub.close()


def _sent(relay) -> dict:
    return relay.calls("/v1/chat/completions")[-1].body


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_token_limit_is_lowered_to_the_collections_never_raised(capped, stream) -> None:
    live, relay = capped
    client = openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    for asked, expected in ((500, 100), (40, 40), (None, 100)):
        limit = {} if asked is None else {"max_tokens": asked}
        reply = client.chat.completions.create(
            model="capped", messages=ask(REFUND), stream=stream, **limit
        )
        if stream:
            list(reply)
        assert _sent(relay)["max_tokens"] == expected, asked
    client.responses.create(model="capped", input=REFUND, max_output_tokens=5000)
    assert _sent(relay)["max_tokens"] == 100


def test_a_fixed_parameter_is_replaced_by_the_collections_value(capped) -> None:
    live, relay = capped
    client = openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    client.chat.completions.create(
        model="capped", messages=ask(REFUND), temperature=1.7, top_p=0.2, presence_penalty=0.5
    )
    sent = _sent(relay)
    assert sent["temperature"] == 0.3 and "top_p" not in sent
    assert sent["presence_penalty"] == 0.5  # allowed: as sent


@pytest.mark.parametrize(
    ("route", "extra", "param"),
    [
        ("chat/completions", {"seed": 7}, "seed"),
        ("chat/completions", {"stop": "END", "stream": True}, "stop"),
    ],
)
def test_a_refused_parameter_is_a_400_naming_it(capped, route, extra, param) -> None:
    live, relay = capped
    before = len(relay.calls("/v1/chat/completions"))
    body = {"model": "capped", "messages": ask(REFUND), **extra}
    response = httpx.post(f"{live.url}/v1/{route}", json=body, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert "llm.client_params" in error["message"], error
    assert len(relay.calls("/v1/chat/completions")) == before  # the LLM was never asked
