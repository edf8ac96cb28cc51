"""`model: "auto"` through the official openai SDK: the hub routes each question, says where it
looked (`routing`) and names each source's collection."""

from __future__ import annotations

import openai
import pytest

from tests.conftest import LiveServer

pytestmark = pytest.mark.slow


def client(live: LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)


def test_auto_is_a_model(routed_hub: LiveServer) -> None:
    sdk = client(routed_hub)
    assert [m.id for m in sdk.models.list()] == ["docs", "soporte", "auto"]
    assert sdk.models.retrieve("auto").id == "auto"


def test_chat_with_auto_answers_from_the_collection_it_chose(routed_hub: LiveServer) -> None:
    reply = client(routed_hub).chat.completions.create(
        model="auto",
        messages=[{"role": "user", "content": "¿En cuántos días llega el reembolso a la tarjeta?"}],
    )
    assert reply.model == "auto"
    extra = reply.model_extra
    assert extra["routing"]["searched"] == ["soporte"]
    assert extra["sources"][0]["collection"] == "soporte"
    text = reply.choices[0].message.content
    assert text.startswith("Según la base de conocimientos:") and "5 días hábiles" in text
    assert "Fuentes: [1] [devoluciones.md](" in text and "/passages/p1." in text
    assert extra["sources"][0]["id"].startswith("soporte:devoluciones.md#")


def test_responses_stream_with_auto_carries_the_routing(routed_hub: LiveServer) -> None:
    stream = client(routed_hub).responses.create(
        model="auto", input="Which cipher encrypts customer data stored on disk?", stream=True
    )
    final = [event for event in stream if event.type == "response.completed"][0].response
    extra = final.model_extra
    assert extra["routing"]["decision"] == "narrow" and extra["routing"]["searched"] == ["docs"]
    assert {s["collection"] for s in extra["sources"]} == {"docs"}
    assert "AES-256" in final.output_text


def test_unknown_models_can_go_to_auto(routed_hub: LiveServer) -> None:
    hub = routed_hub.hub
    before = hub.config
    sdk = client(routed_hub)
    question = [{"role": "user", "content": "¿Qué hago si la impresora no imprime?"}]
    assert (
        "routing" not in sdk.chat.completions.create(model="gpt-4o", messages=question).model_extra
    )
    hub.config = before.model_copy(update={"unknown_model": "auto"})
    try:
        reply = sdk.chat.completions.create(model="gpt-4o", messages=question)
    finally:
        hub.config = before
    assert reply.model == "gpt-4o"
    assert reply.model_extra["routing"]["searched"] == ["soporte"]
