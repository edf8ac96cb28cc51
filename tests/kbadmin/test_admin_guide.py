"""Every curl example of the voice pipeline's guide (§13.2), in order, on a fresh hub with a real
model (the bundled MiniLM: it finds the guide's Spanish examples, hybrid with BM25), restarting
the server between steps to prove what `persist` means."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_api.settings import Settings
from tests.conftest import LiveServer, assert_error_shape, minilm_collection, write_config

FAQ = """# Caxalia TPV — Preguntas frecuentes

## ¿Ofrecéis reembolsos?

Sí. Todos los planes tienen un periodo de devolución de **14 días naturales** desde la compra, sin
necesidad de justificación. Pasado ese plazo, los reembolsos se evalúan caso por caso por el
equipo de soporte.

## ¿Cuál es el horario de atención al cliente?

El equipo de soporte atiende de lunes a viernes, de 09:00 a 18:00 CET, excepto festivos nacionales.
"""
POLICIES = """# Políticas internas

## Retención de registros

Los datos de un cliente que cancela y da de baja su cuenta se conservan durante 6 meses y después
se borran de forma definitiva.
"""
NOTE = {
    "source": "crm/cliente_456_nota_20260826",
    "text": (
        "Cliente: Javier García, id=456. Plan contratado: Premium Anual, renovación 15/02/2027. "
        "Contacto: +34 600 111 222, javier@empresa.es. Notas: prefiere que le llamen por la mañana "
        "antes de las 11h. Ha reportado un incidente con la factura número 2026-08-114 el "
        "20/08/2026 que ya fue resuelto con un descuento del 15% aplicado en la siguiente factura."
    ),
    "metadata": {"cliente_id": 456, "pais": "es", "categoria": "crm"},
    "persist": True,
    "dynamic": True,
}
ORDER_ITEMS = {
    "items": [
        {
            "text": (
                "Pedido 8942 — 25/08/2026. Productos: Teclado RGB Pro x1, Ratón Ergonómico x1. "
                "Estado: enviado, tracking 1Z999AA10123456784. Entrega estimada: 27/08/2026."
            ),
            "source": "pedidos/cliente_456/8942",
            "metadata": {"pedido_id": 8942, "estado": "enviado"},
        },
        {
            "text": (
                "Dirección de envío habitual del cliente 456: Av. Diagonal 444, puerta 3, 08013 "
                "Barcelona, España. Contacto entrega: +34 600 111 222."
            ),
            "source": "direcciones/cliente_456/principal",
            "metadata": {"tipo": "envio", "predeterminada": True},
        },
    ],
    "persist": True,
    "dynamic": True,
}
PROFILE = {
    "source": "crm/cliente_456/perfil",
    "text": (
        "Javier García — ID 456. Plan Premium Anual, renovación automática 15/02/2028. Precio: "
        "24€/mes. Email javier@empresa.es. Tel +34 600 111 222. Dirección envío habitual: Av. "
        "Diagonal 444, puerta 3, 08013 Barcelona. Notas: siempre prefiere atención por la mañana, "
        "antes de las 11h. Caso abierto 2026-08-0124: seguimiento calidad postventa, cerrado con "
        "valoración 5/5."
    ),
    "metadata": {"cliente_id": 456, "pais": "es", "actualizado": "2026-08-26"},
    "dynamic": True,
    "persist": True,
}
HEADER = "Fragmentos relevantes recuperados de la base de conocimientos:"


class Pipeline:
    """The voice pipeline's side: one hub data dir, servers started and stopped on it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server: LiveServer | None = None
        self.http = httpx.Client()

    def restart(self) -> None:
        self.stop()
        self.server = LiveServer(self.settings).start()
        self.http = httpx.Client(base_url=self.server.url + "/v1/rag", timeout=60)

    def stop(self) -> None:
        if self.server is not None:
            self.http.close()
            self.server.stop()
            self.server = None

    def post(self, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        response = self.http.post(path, json=body)
        assert response.status_code == status, response.text
        return response.json()

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def total(self) -> int:
        return self.get("/status")["chunks"]

    def sources(self) -> dict[str, dict[str, Any]]:
        return {item["source"]: item for item in self.get("/sources")["items"]}


@pytest.fixture
def pipeline(tmp_path: Path) -> Callable[[], Pipeline]:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "01_faq_producto.md").write_text(FAQ, encoding="utf-8")
    (kb / "02_politicas_internas.md").write_text(POLICIES, encoding="utf-8")
    retrieval = {"top_k": 3, "threshold": 0.25, "mode": "hybrid"}
    entry = minilm_collection(kb, language="es", retrieval=retrieval)
    config = write_config(tmp_path / "collections.yaml", {"soporte": entry})
    settings = Settings(config=config, data_dir=tmp_path / "data", ollama_url="http://127.0.0.1:9")
    hub = Pipeline(settings)
    yield hub
    hub.stop()


@pytest.mark.slow
def test_the_guides_curl_examples_in_order(pipeline: Pipeline) -> None:
    pipeline.restart()
    indexed = pipeline.post("/reload", {})
    kb_chunks = indexed["total_after"]
    assert indexed["files"] == 2 and kb_chunks >= 3 and indexed["temporary_removed"] == 0

    # 📤 add a document (free text, automatic chunking)
    added = pipeline.post("/add/document", NOTE)
    assert added == {"added": 1, "sources": [NOTE["source"]], "total_after": kb_chunks + 1}

    # 📤 add N pre-formatted chunks, and one temporary chunk for this session only
    added = pipeline.post("/add/chunks", ORDER_ITEMS)
    assert added["added"] == 2 and added["total_after"] == kb_chunks + 3
    assert added["sources"] == [item["source"] for item in ORDER_ITEMS["items"]]
    session = {"text": "El cliente 456 está ahora en llamada.", "source": "sesion/456"}
    pipeline.post("/add/chunks", {"items": [session], "persist": False})
    assert pipeline.total() == kb_chunks + 4
    session_index = pipeline.get("/chunks", source_exact="sesion/456")["items"][0]["index"]

    pipeline.restart()  # persist: false lives until the next restart
    assert pipeline.total() == kb_chunks + 3
    assert "sesion/456" not in pipeline.sources()
    # ...and its index is never handed out again, although it was the largest
    pipeline.post("/add/document", {"text": "Nota posterior.", "source": "sesion/siguiente"})
    later = pipeline.get("/chunks", source_exact="sesion/siguiente")["items"][0]["index"]
    assert later > session_index
    pipeline.post("/remove", {"source_prefix": "sesion/siguiente", "exact": True})

    # 🔎 try the retrieval over HTTP
    query = "¿Qué pedido tiene Javier García y cuándo llega?"
    found = pipeline.post("/search", {"query": query, "top_k": 3, "threshold": 0.25})
    assert found["query"] == query and found["count"] == len(found["results"]) <= 3
    by_source = {r["source"]: r for r in found["results"]}
    assert {NOTE["source"], "pedidos/cliente_456/8942"} <= set(by_source)
    assert by_source["pedidos/cliente_456/8942"]["text"].startswith("Pedido 8942 — 25/08/2026")
    assert all(0.25 <= r["score"] <= 1 for r in found["results"])

    # the block the pipeline injects (§7.2, §10)
    refund = pipeline.post(
        "/context", {"query": "¿Cuánto tiempo tengo para solicitar un reembolso?", "top_k": 1}
    )
    assert refund["injected"] == 1 and refund["results"][0]["source"] == "01_faq_producto.md"
    score = refund["results"][0]["score"]
    assert refund["block"] == (
        f"{HEADER}\n[1] (source=01_faq_producto.md, score={score:.3f})\n"
        + refund["results"][0]["text"]
    )
    assert "14 días naturales" in refund["block"]
    italian = pipeline.post("/context", {"query": "reembolso", "top_k": 1, "language": "it"})
    assert italian["block"].startswith("Frammenti rilevanti recuperati dalla base di conoscenza:\n")
    nothing = pipeline.post("/context", {"query": "Hola, ¿cómo te llamas?", "threshold": 0.99})
    assert nothing["block"] == "" and nothing["injected"] == 0 and nothing["results"] == []

    # 📋 sources with chunk counts
    listed = pipeline.get("/sources")
    assert listed["count"] == len(listed["items"]) == 5
    sources = pipeline.sources()
    assert sources["01_faq_producto.md"]["has_dynamic"] is False
    assert sources[NOTE["source"]] == {
        "source": NOTE["source"],
        "chunk_count": 1,
        "has_dynamic": True,
    }

    # 🔍 list with query parameters, then with a JSON body ordered by relevance
    page = pipeline.get("/chunks", source_prefix="crm/cliente_456", limit=10, offset=0)
    assert (page["total"], page["offset"], page["limit"], page["query"]) == (1, 0, 10, None)
    note = page["items"][0]
    assert note["chunk_index"] == 1_000_000 + note["index"]
    assert note["score"] is None and note["is_dynamic"] is True
    assert note["metadata"] == NOTE["metadata"] and note["text"] == NOTE["text"]
    ranked = pipeline.post(
        "/chunks/list",
        {
            "source_prefix": "crm/",
            "query": "descuento aplicado en factura",
            "min_score": 0.20,
            "limit": 10,
            "include_text": True,
        },
    )
    assert ranked["total"] == 1 and ranked["query"] == "descuento aplicado en factura"
    assert ranked["items"][0]["index"] == note["index"] and 0.2 <= ranked["items"][0]["score"] <= 1
    assert "15% aplicado" in ranked["items"][0]["text"]

    # 🆙 update one chunk: option A by index, then a restart, then option B by (source, chunk_index)
    new_text = (
        "Cliente: Javier García, id=456. Plan Premium Anual, renovación 15/02/2028 (2 años). "
        "Descuento 20% acordado en la llamada del 10/08."
    )
    new_metadata = {"cliente_id": 456, "categoria": "crm", "ultima_revision": "2026-08-26"}
    updated = pipeline.post(
        "/chunks/update",
        {"index": note["index"], "new_text": new_text, "new_metadata": new_metadata},
    )
    assert updated["updated"] == 1
    assert updated["chunk"] | {"text": None} == {
        **{k: note[k] for k in ("id", "index", "source", "chunk_index", "is_dynamic")},
        "metadata": new_metadata,
        "text": None,
        "score": None,
        "origin": "api",
        "persist": True,
        # labelled anew from the new text
        "type": "prose",
        "quality": 1.0,
        "quality_reasons": [],
    }
    assert updated["chunk"]["text"] == new_text
    pipeline.restart()
    again = pipeline.get("/chunks", source_exact=NOTE["source"])["items"][0]
    assert again["text"] == new_text and again["index"] == note["index"]
    moved = pipeline.post(
        "/chunks/update",
        {
            "source": NOTE["source"],
            "chunk_index": note["chunk_index"],
            "new_source": "crm/cliente_456/nota_principal",
        },
    )["chunk"]
    assert moved["source"] == "crm/cliente_456/nota_principal" and moved["text"] == new_text
    assert (moved["index"], moved["chunk_index"]) == (note["index"], note["chunk_index"])
    assert pipeline.get("/chunks", source_exact=NOTE["source"])["total"] == 0
    assert pipeline.total() == kb_chunks + 3
    gone = {"source": NOTE["source"], "chunk_index": note["chunk_index"], "new_text": "x"}
    assert_error_shape(pipeline.http.post("/chunks/update", json=gone), 404, "CHUNK_NOT_FOUND")
    stale = {"index": 10**9, "new_text": "x"}
    assert_error_shape(pipeline.http.post("/chunks/update", json=stale), 404, "CHUNK_NOT_FOUND")
    several = {"source": "01_faq_producto.md", "new_metadata": {}}
    error = assert_error_shape(
        pipeline.http.post("/chunks/update", json=several), 409, "AMBIGUOUS_SOURCE"
    )
    assert "chunk_index" in error["message"]

    # 🔄 upsert a whole document: create, replace (2 chunks -> 1), delete with text ""
    long_profile = {**PROFILE, "text": PROFILE["text"] + " " + PROFILE["text"]}
    created = pipeline.post("/upsert/document", long_profile)
    assert created["removed"] == 0 and created["added"] == 2 and created["mode"] == "upsert"
    replaced = pipeline.post("/upsert/document", PROFILE)
    assert replaced == {
        "removed": 2,
        "added": 1,
        "sources": [PROFILE["source"]],
        "total_after": kb_chunks + 4,
        "mode": "upsert",
    }
    deleted = pipeline.post("/upsert/document", {"source": PROFILE["source"], "text": ""})
    assert (deleted["removed"], deleted["added"], deleted["total_after"]) == (1, 0, kb_chunks + 3)
    assert PROFILE["source"] not in pipeline.sources()

    # 🛡️ remove exact vs by prefix (and the auto-numbered dynamic# sources)
    for day in ("20260826", "20260827"):
        pipeline.post("/add/document", {**NOTE, "source": f"crm/cliente_456_nota_{day}"})
    anonymous = pipeline.post("/add/chunks", {"items": [{"text": "Nota rápida sin fuente."}]})
    assert re.fullmatch(r"dynamic#\d+", anonymous["sources"][0])
    exact = pipeline.post(
        "/remove", {"source_prefix": "crm/cliente_456_nota_20260826", "exact": True}
    )
    assert exact["removed"] == 1 and "crm/cliente_456_nota_20260827" in pipeline.sources()
    assert pipeline.post("/remove", {"source_prefix": "dynamic#"})["removed"] == 1
    by_prefix = pipeline.post("/remove", {"source_prefix": "crm/cliente_456"})
    assert by_prefix["removed"] == 2  # nota_20260827 and nota_principal
    assert by_prefix["total_after"] == kb_chunks + 2
    assert not [s for s in pipeline.sources() if s.startswith("crm/")]

    # 📊 status
    status = pipeline.get("/status")
    assert status["enabled"] is True and status["collection"] == "soporte"
    assert (status["chunks"], status["sources"], status["api_chunks"]) == (kb_chunks + 2, 4, 2)
    assert (status["embedding_dim"], status["device"]) == (384, "cpu")
    assert (status["top_k"], status["threshold"], status["language"]) == (3, 0.25, "es")
    assert status["embedding_model"] == "sentence-transformers:all-MiniLM-L6-v2"

    # 🔄 reload from the kb folder: temporary chunks go, persistent ones stay, files re-embedded
    pipeline.post("/add/document", {"text": "Temporal.", "source": "sesion/x", "persist": False})
    reloaded = pipeline.post("/reload", {"force_rebuild": True})
    assert reloaded["temporary_removed"] == 1 and reloaded["files"] == 2
    assert reloaded["chunks_embedded"] == kb_chunks and reloaded["chunks_reused"] == 0
    assert reloaded["total_after"] == kb_chunks + 2
    pipeline.restart()
    assert set(pipeline.sources()) == {
        "01_faq_producto.md",
        "02_politicas_internas.md",
        "pedidos/cliente_456/8942",
        "direcciones/cliente_456/principal",
    }
