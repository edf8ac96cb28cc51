"""Generation parameters reach the LLM as the client sent them (an OpenAI-compatible upstream:
the same fields; Ollama: its `options`), and what the hub cannot do is refused by name."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.support.openai_support import REFUND, ask

ANSWER = "You have 30 days to ask for a refund [1]."


@pytest.fixture(autouse=True)
def answering(upstreams):
    for fake in upstreams:
        fake.reply = ANSWER


SAMPLING = {
    "temperature": 0.4,
    "top_p": 0.9,
    "stop": ["\n\nQ:", "END"],
    "seed": 7,
    "presence_penalty": 0.5,
    "frequency_penalty": -0.25,
}


@pytest.mark.parametrize("stream", [False, True])
def test_an_openai_compatible_upstream_gets_the_parameters_as_sent(client, upstreams, stream):
    _, relay = upstreams
    reply = client.chat.completions.create(
        model="relay", messages=ask(REFUND), max_completion_tokens=80, stream=stream, **SAMPLING
    )
    if stream:
        list(reply)
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert {name: sent.get(name) for name in SAMPLING} == SAMPLING
    assert sent["max_tokens"] == 80
    assert sent["stream"] is True  # the hub always streams from its upstream


def test_ollama_gets_them_in_its_options(client, upstreams):
    ollama, _ = upstreams
    client.chat.completions.create(
        model="docs", messages=ask(REFUND), max_tokens=50, stop="END", seed=3, top_p=0.5
    )
    options = ollama.calls("/api/chat")[-1].body["options"]
    assert options == {
        "temperature": 0.2,
        "num_predict": 50,
        "stop": ["END"],
        "seed": 3,
        "top_p": 0.5,
    }
    client.chat.completions.create(model="docs", messages=ask(REFUND), **SAMPLING)
    options = ollama.calls("/api/chat")[-1].body["options"]
    assert options == {**SAMPLING, "temperature": 0.4}


def test_the_responses_api_forwards_its_own(client, upstreams):
    ollama, relay = upstreams
    done = client.responses.create(
        model="relay", input=REFUND, temperature=0.1, top_p=0.3, max_output_tokens=40
    )
    assert (done.top_p, done.temperature, done.max_output_tokens) == (0.3, 0.1, 40)
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.1, 0.3, 40)
    client.responses.create(model="docs", input=REFUND, top_p=0.8, max_output_tokens=20)
    options = ollama.calls("/api/chat")[-1].body["options"]
    assert options == {"temperature": 0.2, "num_predict": 20, "top_p": 0.8}


def test_unset_parameters_are_not_sent(client, upstreams):
    _, relay = upstreams
    client.chat.completions.create(model="relay", messages=ask(REFUND))
    sent = relay.calls("/v1/chat/completions")[-1].body
    assert not set(SAMPLING) - {"temperature"} & set(sent), sent


REFUSED = [  # (route, extra fields, the parameter named, a phrase of the message)
    ("chat/completions", {"n": 2}, "n", "one answer per request"),
    ("chat/completions", {"logprobs": True}, "logprobs", "log probabilities"),
    ("chat/completions", {"top_logprobs": 3}, "top_logprobs", "log probabilities"),
    ("chat/completions", {"modalities": ["text", "audio"]}, "modalities", "text only"),
    ("chat/completions", {"audio": {"voice": "alloy", "format": "wav"}}, "audio", "text only"),
    ("chat/completions", {"stop": ["a", "b", "c", "d", "e"]}, "stop", "at most 4"),
    ("chat/completions", {"top_p": 1.5}, "top_p", "less than or equal to 1"),
    ("chat/completions", {"presence_penalty": 3}, "presence_penalty", "less than or equal to 2"),
    ("responses", {"top_logprobs": 2}, "top_logprobs", "log probabilities"),
    (
        "responses",
        {"include": ["message.output_text.logprobs"]},
        "include",
        "log probabilities",
    ),
]


@pytest.mark.parametrize(("route", "extra", "param", "phrase"), REFUSED)
def test_what_the_hub_cannot_do_is_refused_by_name(server, route, extra, param, phrase):
    body = {"model": "plain", **extra}
    body |= {"messages": ask(REFUND)} if route == "chat/completions" else {"input": REFUND}
    response = httpx.post(f"{server.url}/v1/{route}", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert phrase in error["message"], error["message"]


def test_the_sdk_raises_bad_request_naming_the_parameter(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="plain", messages=ask(REFUND), logprobs=True)
    assert info.value.param == "logprobs"
    asked_nothing = client.chat.completions.create(
        model="plain", messages=ask(REFUND), n=1, logprobs=False, modalities=["text"]
    )
    assert asked_nothing.choices[0].message.content


@pytest.mark.parametrize("n", [0, 2, -1])
def test_n_other_than_one_is_refused(server, n) -> None:
    body = {"model": "plain", "messages": ask(REFUND), "n": n}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "n"
