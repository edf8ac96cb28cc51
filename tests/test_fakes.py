"""The fake upstreams speak their protocols faithfully: proven with the real ollama and openai clients."""

import math
from concurrent.futures import ThreadPoolExecutor

import httpx
import ollama
import openai
import pytest

from tests.support.fakes import FakeOllama, FakeOpenAI, embed

LONG_REPLY = " ".join(f"word{i}" for i in range(200))
CATS = ["The cat sat on the warm mat", "A cat sleeping on a mat"]
TAXES = "Quarterly tax filing deadlines for corporations"


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine of two unit vectors."""
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
def ollama_client(fake_ollama: FakeOllama) -> ollama.Client:
    return ollama.Client(host=fake_ollama.url)


@pytest.fixture
def openai_client(fake_openai: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake_openai.url + "/v1", api_key="sk-test", max_retries=0)


def test_ollama_version_and_tags(fake_ollama, ollama_client):
    assert httpx.get(fake_ollama.url + "/api/version").json() == {"version": "0.6.3"}
    models = {m.model: m for m in ollama_client.list().models}
    assert set(models) == {"nomic-embed-text:latest", "mxbai-embed-large:latest", "llama3.2:latest"}
    assert models["llama3.2:latest"].details.family == "llama"
    assert fake_ollama.requests[-1].headers["user-agent"].startswith("ollama-python")


def test_ollama_embed_is_normalised_deterministic_and_semantic(fake_ollama, ollama_client):
    cat, kitten, taxes = ollama_client.embed(
        model="nomic-embed-text", input=[*CATS, TAXES]
    ).embeddings
    assert all(len(v) == 768 and math.isclose(cosine(v, v), 1.0) for v in (cat, kitten, taxes))
    assert cosine(cat, kitten) > 0.4 and abs(cosine(cat, taxes)) < 0.15
    assert ollama_client.embed(model="nomic-embed-text", input=CATS[0]).embeddings == [cat]
    assert len(ollama_client.embed(model="mxbai-embed-large", input="x").embeddings[0]) == 1024
    assert ollama_client.embeddings(model="nomic-embed-text", prompt=CATS[0]).embedding == cat
    assert fake_ollama.calls("/api/embed")[0].body["input"] == [*CATS, TAXES]


def test_ollama_chat_non_stream(fake_ollama, ollama_client):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    response = ollama_client.chat(model="llama3.2", messages=messages, stream=False)
    assert response.message.content == "Answer to: What is the capital of France?"
    assert response.done and response.done_reason == "stop"
    assert (response.prompt_eval_count, response.eval_count) == (8, 8)
    question = " ".join(f"w{i}" for i in range(20))
    long = ollama_client.chat(model="llama3.2", messages=[{"role": "user", "content": question}])
    assert long.message.content == "Answer to: " + " ".join(question.split()[:12])


def test_ollama_chat_stream(fake_ollama, ollama_client):
    fake_ollama.reply = "Paris  is the capital.\nOf France! "
    messages = [{"role": "user", "content": "Capital of France?"}]
    *pieces, final = ollama_client.chat(model="llama3.2", messages=messages, stream=True)
    assert "".join(p.message.content for p in pieces) == fake_ollama.reply
    assert len(pieces) == 6 and not any(p.done for p in pieces)
    assert final.done and final.message.content == "" and final.eval_count == 6
    assert fake_ollama.pieces_sent == fake_ollama.pieces_total == 6
    raw = httpx.post(
        fake_ollama.url + "/api/chat", json={"model": "llama3.2", "messages": messages}
    )
    assert raw.headers["content-type"] == "application/x-ndjson"  # stream defaults to true
    assert len(raw.text.splitlines()) == 7


def test_ollama_reply_callable(fake_ollama, ollama_client):
    fake_ollama.reply = lambda body: f"model={body['model']} n={len(body['messages'])}"
    response = ollama_client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert response.message.content == "model=llama3.2 n=1"


def test_ollama_errors_and_injected_failures(fake_ollama, ollama_client):
    with pytest.raises(ollama.ResponseError) as info:
        ollama_client.embed(model="nope", input="x")
    assert info.value.status_code == 404
    assert info.value.error == 'model "nope" not found, try pulling it first'
    with pytest.raises(ollama.ResponseError) as info:
        list(ollama_client.chat(model="nope", messages=[], stream=True))
    assert info.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as info:
        ollama_client.chat(model="nomic-embed-text", messages=[])
    assert info.value.status_code == 400
    fake_ollama.fail(status=503, times=2)
    for _ in range(2):
        with pytest.raises(ollama.ResponseError) as info:
            ollama_client.list()
        assert info.value.status_code == 503
    assert ollama_client.list().models


def test_stop_refuses_connections_and_start_reuses_the_port(fake_ollama, ollama_client):
    assert ollama_client.list().models  # leaves a kept-alive connection in the client's pool
    url = fake_ollama.url
    fake_ollama.stop()
    with pytest.raises(ConnectionError):
        ollama_client.list()
    fake_ollama.start()
    assert fake_ollama.url == url and ollama_client.list().models


def test_concurrent_requests_are_all_recorded(fake_ollama, ollama_client):
    def one(i: int) -> None:
        ollama_client.embed(model="nomic-embed-text", input=f"text {i}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(32)))
    assert sorted(r.body["input"] for r in fake_ollama.calls("/api/embed")) == sorted(
        f"text {i}" for i in range(32)
    )


def test_ollama_client_disconnect_stops_generation(fake_ollama, ollama_client):
    fake_ollama.reply, fake_ollama.token_delay = LONG_REPLY, 0.01
    stream = ollama_client.chat(model="llama3.2", messages=[], stream=True)
    assert [next(stream).message.content for _ in range(2)] == ["word0 ", "word1 "]
    stream.close()
    assert fake_ollama.disconnected.wait(5)
    assert fake_ollama.disconnects == 1
    assert fake_ollama.pieces_sent < 20 < fake_ollama.pieces_total == 200


def test_openai_models_and_chat(fake_openai, openai_client):
    assert [m.id for m in openai_client.models.list()] == ["gpt-4o-mini", "text-embedding-3-small"]
    completion = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Name three colours"}]
    )
    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert completion.choices[0].message.content == "Answer to: Name three colours"
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (3, 5)
    assert fake_openai.calls("/v1/chat/completions")[0].headers["authorization"] == "Bearer sk-test"


def test_openai_chat_stream(fake_openai, openai_client):
    fake_openai.reply = "Red, green and blue."
    messages = [{"role": "user", "content": "Colours?"}]
    chunks = list(
        openai_client.chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    *deltas, usage_chunk = chunks
    assert "".join(c.choices[0].delta.content or "" for c in deltas) == fake_openai.reply
    assert deltas[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in deltas][-2:] == [None, "stop"]
    assert usage_chunk.choices == [] and usage_chunk.usage.completion_tokens == 4
    plain = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, stream=True
    )
    assert all(c.choices and c.usage is None for c in plain)
    body = {"model": "gpt-4o-mini", "messages": messages, "stream": True}
    raw = httpx.post(fake_openai.url + "/v1/chat/completions", json=body)
    assert raw.headers["content-type"] == "text/event-stream"
    assert raw.text.endswith("data: [DONE]\n\n")


def test_openai_embeddings_base64_and_float(fake_openai, openai_client):
    texts = [*CATS, TAXES]
    default = openai_client.embeddings.create(model="text-embedding-3-small", input=texts)
    assert fake_openai.calls("/v1/embeddings")[0].body["encoding_format"] == "base64"
    floats = openai_client.embeddings.create(
        model="text-embedding-3-small", input=texts, encoding_format="float"
    )
    for packed, plain, text in zip(default.data, floats.data, texts, strict=True):
        assert plain.embedding == embed(text, 1536)
        assert packed.embedding == pytest.approx(plain.embedding, abs=1e-6)
    assert default.usage.prompt_tokens == 19
    short = openai_client.embeddings.create(
        model="text-embedding-3-small", input="x y", dimensions=256
    ).data[0]
    assert len(short.embedding) == 256 and math.isclose(cosine(short.embedding, short.embedding), 1)


def test_openai_errors_and_injected_failures(fake_openai, openai_client):
    with pytest.raises(openai.NotFoundError) as info:
        openai_client.embeddings.create(model="nope", input="x")
    assert info.value.code == "model_not_found"
    fake_openai.fail(status=503, path="/v1/models")
    with pytest.raises(openai.InternalServerError):
        openai_client.models.list()
    assert openai_client.models.list().data
    fake_openai.stop()
    with pytest.raises(openai.APIConnectionError):
        openai_client.models.list()


def test_openai_api_key_is_enforced():
    with FakeOpenAI(required_api_key="sk-right") as fake:
        wrong = openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as info:
            wrong.models.list()
        assert info.value.code == "invalid_api_key"
        right = openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-right", max_retries=0)
        assert right.models.list().data


def test_openai_client_disconnect_stops_generation(fake_openai, openai_client):
    fake_openai.reply, fake_openai.token_delay = LONG_REPLY, 0.01
    stream = openai_client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    chunks = [next(stream) for _ in range(3)]  # the role chunk, then two pieces
    assert [c.choices[0].delta.content for c in chunks] == ["", "word0 ", "word1 "]
    stream.close()
    assert fake_openai.disconnected.wait(5)
    assert fake_openai.disconnects == 1
    assert fake_openai.pieces_sent < 20 < fake_openai.pieces_total == 200
