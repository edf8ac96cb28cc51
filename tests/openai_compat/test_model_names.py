"""OpenAI model names are collections (rag_api.openai_compat.model_names): which names the hub lists,
where a request for each goes, and what an unknown one gets under each `unknown_model`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_api.errors import CollectionDisabled
from rag_api.hub import Hub
from rag_api.openai_compat.model_names import (
    ModelNotFound,
    direct_collection,
    find_model,
    model_card,
    models,
    target,
)
from rag_api.routing import Target
from tests.conftest import hash_collection, write_config

LLM = {"provider": "ollama", "model": "llama3"}


@pytest.fixture
def open_named(tmp_path: Path, make_settings, open_hub):
    def opened(unknown_model: str = "default", routed: bool = True) -> Hub:
        collections = {
            "docs": hash_collection(),
            "notes": hash_collection(llm=LLM, routing={"enabled": routed}),
            "off": hash_collection(enabled=False, llm=LLM),
        }
        here = tmp_path / f"{unknown_model}-{routed}"  # a store each: one hub may hold it
        here.mkdir(exist_ok=True)
        config = write_config(here / "c.yaml", collections, unknown_model=unknown_model)
        return open_hub(make_settings(config, data_dir=here / "data"))

    return opened


def test_the_models_are_the_enabled_collections_auto_and_each_llms_own(open_named) -> None:
    assert models(open_named()) == ["docs", "notes", "auto", "notes:llm"]
    # `auto` only with two collections to route between
    assert models(open_named(routed=False)) == ["docs", "notes", "notes:llm"]


@pytest.mark.parametrize("unknown_model", ["default", "error", "auto"])
def test_a_collections_name_or_auto_goes_there_whatever_unknown_model_says(
    open_named, unknown_model: str
) -> None:
    hub = open_named(unknown_model)
    for model in ("notes", "rag/notes"):
        assert target(hub, model) == Target(hub.collection("notes"))
    for model in ("auto", "rag/auto"):
        assert target(hub, model) == Target(None)
    with pytest.raises(CollectionDisabled):  # named, a disabled collection is not a fallback
        target(hub, "off")


def test_an_unknown_name_goes_to_the_default_collection_or_auto_or_is_refused(open_named) -> None:
    hub = open_named("default")
    assert target(hub, "gpt-4o") == Target(hub.collection("docs"))
    assert target(open_named("auto"), "gpt-4o") == Target(None)
    with pytest.raises(ModelNotFound) as refused:
        target(open_named("error"), "gpt-4o")
    assert refused.value.param == "model" and refused.value.status == 404
    assert refused.value.message == (
        "The model 'gpt-4o' does not exist (unknown_model: error in collections.yaml): the models "
        "are the collections docs, notes, auto, notes:llm, also reachable as rag/<name>"
    )


@pytest.mark.parametrize("unknown_model", ["default", "error", "auto"])
def test_an_unknown_name_with_the_prefix_is_refused_whatever_unknown_model_says(
    open_named, unknown_model: str
) -> None:
    with pytest.raises(ModelNotFound) as refused:
        target(open_named(unknown_model), "rag/gpt-4o")
    assert refused.value.message == (
        "The model 'rag/gpt-4o' does not exist: the models are the collections docs, notes, auto, "
        "notes:llm, also reachable as rag/<name>"
    )


def test_a_lookup_finds_only_a_listed_model(open_named) -> None:
    hub = open_named()
    assert [find_model(hub, m) for m in ("docs", "rag/docs", "notes:llm")] == [
        "docs",
        "docs",
        "notes:llm",
    ]
    for model in ("off", "gpt-4o", "rag/off"):
        with pytest.raises(ModelNotFound) as refused:
            find_model(hub, model)
        assert refused.value.message == f"The model '{model}' does not exist"
        assert refused.value.param == "model"


def test_a_collections_llm_is_its_name_and_llm(open_named) -> None:
    hub = open_named()
    found = [direct_collection(hub, m) for m in ("notes:llm", "rag/notes:llm", "off:llm")]
    assert found == ["notes", "notes", "off"]
    for model in ("notes", "nope:llm", "notes:llmx", ":llm"):
        assert direct_collection(hub, model) is None


def test_a_model_card_is_dated_by_collections_yaml(open_named) -> None:
    hub = open_named()
    os.utime(hub.config.path, (1_700_000_000.5, 1_700_000_000.5))
    assert model_card(hub, "docs") == {
        "id": "docs",
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "rag-hub",
    }
    hub.config.path.unlink()
    assert model_card(hub, "docs")["created"] == 0


def test_a_refusal_says_so_when_no_model_is_left(tmp_path: Path, make_settings, open_hub) -> None:
    config = write_config(
        tmp_path / "c.yaml", {"docs": hash_collection(enabled=False)}, unknown_model="error"
    )
    hub = open_hub(make_settings(config))
    assert models(hub) == []
    with pytest.raises(ModelNotFound) as refused:
        target(hub, "gpt-4o")
    assert "the models are the collections none, also reachable as rag/<name>" in (
        refused.value.message
    )
