"""rag_api.client against a live hub: the calls, the injection into a chat turn, and a hub that is
down, refusing or misconfigured — the voice turn goes on with its messages unchanged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from rag_api.client import AsyncRagClient, RagClient, RagClientError, inject_block, last_user_text
from rag_api.settings import Settings
from tests.conftest import LiveServer, free_port, hash_collection, write_config

HEADER = "Fragmentos relevantes recuperados de la base de conocimientos:"
TURN = [
    {"role": "system", "content": "Eres un asistente de voz."},
    {"role": "user", "content": "Hola"},
    {"role": "assistant", "content": "¡Hola! ¿En qué te ayudo?"},
    {"role": "user", "content": "¿Cuántos días tengo para el reembolso?"},
]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("client")
    entry = hash_collection(language="es", retrieval={"threshold": 0.3, "top_k": 2})
    config = write_config(root / "c.yaml", {"soporte": entry})
    settings = Settings(
        config=config, data_dir=root / "data", api_key="reader", admin_api_key="admin"
    )
    server = LiveServer(settings).start()
    with RagClient(server.url, api_key="admin") as client:
        client.upsert_document(
            "faq/reembolsos",
            "Reembolso: tienes 14 días naturales desde la compra para el reembolso.",
        )
    yield server
    server.stop()


def test_calls_round_trip(hub: LiveServer) -> None:
    with RagClient(hub.url, api_key="admin", collection="soporte") as client:
        added = client.add_chunks([{"text": "Pedido 8942 enviado.", "source": "pedidos/8942"}])
        assert added["added"] == 1 and added["sources"] == ["pedidos/8942"]
        assert client.add_document("Nota de prueba", source="crm/1", persist=False)["added"] == 1
        found = client.search("pedido 8942 enviado", top_k=1)
        assert found["results"][0]["source"] == "pedidos/8942"
        faq = client.search("reembolso", filters={"source_prefix": "faq/"})
        assert {r["source"] for r in faq["results"]} == {"faq/reembolsos"}
        only_boilerplate = {"types": ["boilerplate"]}  # every chunk here is prose
        assert client.search("pedido 8942", filters=only_boilerplate)["results"] == []
        hidden = client.context("¿días para el reembolso?", filters=only_boilerplate)
        assert hidden["results"] == [] and not hidden["injected"]
        context = client.context("¿días para el reembolso?", language="es")
        assert context["block"].startswith(HEADER + "\n[1] (source=faq/reembolsos, score=")
        assert client.remove("crm/", exact=False)["removed"] == 1
        assert client.remove("pedidos/8942", exact=True)["removed"] == 1
        assert client.status()["collection"] == "soporte"
    with RagClient(hub.url, api_key="reader") as reader:
        with pytest.raises(RagClientError) as refused:
            reader.add_document("sin clave")
        assert (refused.value.status, refused.value.code) == (403, "FORBIDDEN")
    with RagClient(hub.url, api_key="reader", collection="nope") as lost:
        with pytest.raises(RagClientError) as missing:
            lost.search("x")
        assert (missing.value.status, missing.value.code) == (404, "COLLECTION_NOT_FOUND")


def test_a_prefetched_turn_is_answered_from_the_prefetch(hub: LiveServer) -> None:
    with RagClient(hub.url, api_key="reader", collection="soporte") as client:
        assert client.prefetch("¿Cuántos días para pedir un reembolso?") == {"prefetching": True}
        assert client.context("¿Cuántos días para pedir un reembolso?")["cached"] is True
        assert "cached" not in client.context("¿Y para cambiar el pedido?")


def test_inject_as_system_and_as_user(hub: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    reader = RagClient(hub.url, api_key="reader")
    with reader as client, caplog.at_level(logging.INFO, "rag_api.client"):
        as_system = client.inject(TURN, turn_id="turn_91a75")
        assert as_system[0] == TURN[0] and as_system[2:] == TURN[1:]
        assert as_system[1]["role"] == "system" and as_system[1]["content"].startswith(HEADER)
        assert "14 días naturales" in as_system[1]["content"]
        assert "RAG: injected 1 chunks for turn=turn_91a75 — faq/reembolsos#c" in caplog.text
        as_user = client.inject(TURN, inject_as="user")
        assert as_user[:3] == TURN[:3] and len(as_user) == len(TURN)
        question, block = as_user[3]["content"].split("\n\n", 1)
        assert question == TURN[3]["content"] and block.startswith(HEADER)
        small_talk = client.inject([{"role": "user", "content": "qué tal"}], turn_id="t2")
        assert small_talk == [{"role": "user", "content": "qué tal"}]
        assert "RAG: no relevant chunk for turn=t2" in caplog.text
    assert TURN[3]["content"] == "¿Cuántos días tengo para el reembolso?"  # input untouched


def test_inject_never_raises_into_the_turn(
    hub: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    down = RagClient(f"http://127.0.0.1:{free_port()}", inject_timeout=0.5)
    lost = RagClient(hub.url, api_key="reader", collection="nope")
    no_key = RagClient(hub.url)
    bad_option = RagClient(hub.url, api_key="reader")
    with caplog.at_level(logging.WARNING, "rag_api.client"):
        assert down.inject(TURN, turn_id="turn_1") == TURN
        assert "RAG search failed for turn=turn_1: UNREACHABLE" in caplog.text
        assert lost.inject(TURN, turn_id="turn_2") == TURN
        assert "RAG search failed for turn=turn_2: 404 COLLECTION_NOT_FOUND" in caplog.text
        assert no_key.inject(TURN, turn_id="turn_4") == TURN
        assert "RAG search failed for turn=turn_4: 401 UNAUTHORIZED" in caplog.text
        assert bad_option.inject(TURN, inject_as="assistant", turn_id="turn_3") == TURN
        assert "turn=turn_3" in caplog.text
    for client in (down, lost, no_key, bad_option):
        client.close()


def test_async_client(hub: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    async def turn() -> tuple[list, list, dict]:
        async with AsyncRagClient(hub.url, api_key="admin") as client:
            added = await client.add_document("Garantía de 2 años.", source="faq/garantia")
            injected = await client.inject(TURN, query="reembolso días naturales")
        async with AsyncRagClient(f"http://127.0.0.1:{free_port()}") as down:
            unchanged = await down.inject(TURN, turn_id="async_turn")
        return injected, unchanged, added

    with caplog.at_level(logging.WARNING, "rag_api.client"):
        injected, unchanged, added = asyncio.run(turn())
    assert added["added"] == 1
    assert injected[1]["content"].startswith(HEADER) and injected[2:] == TURN[1:]
    assert unchanged == TURN and "RAG search failed for turn=async_turn" in caplog.text


def test_injection_helpers_on_content_parts() -> None:
    parts = [{"role": "user", "content": [{"type": "input_text", "text": "hola"}]}]
    assert last_user_text(parts) == "hola"
    appended = inject_block(parts, "BLOCK", "user")
    assert appended[0]["content"][-1] == {"type": "input_text", "text": "BLOCK"}
    assert parts[0]["content"] == [{"type": "input_text", "text": "hola"}]
    assert inject_block([], "BLOCK", "system") == [{"role": "system", "content": "BLOCK"}]
    assert inject_block([], "BLOCK", "user") == [{"role": "user", "content": "BLOCK"}]
    assert last_user_text([{"role": "assistant", "content": "x"}]) is None


def test_blank_turn_is_not_searched(caplog: pytest.LogCaptureFixture) -> None:
    blank = [{"role": "user", "content": "  "}]
    with RagClient(f"http://127.0.0.1:{free_port()}") as down, caplog.at_level(logging.INFO):
        assert down.inject(blank) == blank and down.inject([]) == []
    assert not caplog.records  # no request was attempted
