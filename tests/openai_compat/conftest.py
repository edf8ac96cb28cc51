"""The OpenAI API tests' live hub: the kb of tests/support/openai_support.py indexed into `docs`
(citations on) and `quiet` (citations off) beside a disabled `off`, extractive answers; one per
test module. `shipped`: the repository's own `docs` and `soporte` on their kb folders, as
collections.yaml ships them (real MiniLM and e5), one per test session. `ollama`: the fake
Ollama the direct tests of LLM replies talk to."""

from __future__ import annotations

import openai
import pytest

from rag_api.settings import Settings
from tests.conftest import REPO, hash_collection, repo_yaml, write_config
from tests.support.fakes import FakeOllama
from tests.support.openai_support import start_indexed, write_kb


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai_api")
    kb = write_kb(root / "kb")
    collections = {
        "docs": hash_collection(kb),
        "quiet": hash_collection(kb, citations=False),
        "off": hash_collection(kb, enabled=False),
    }
    config = write_config(root / "collections.yaml", collections)
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, live = start_indexed(settings, "docs", "quiet")
    yield live
    live.stop()
    hub.close()


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)


@pytest.fixture(scope="session")
def shipped(tmp_path_factory):
    root = tmp_path_factory.mktemp("shipped")
    collections = repo_yaml("collections.yaml")["collections"]
    names = ("docs", "soporte")
    config = write_config(
        root / "collections.yaml",
        {name: {**collections[name], "kb": str(REPO / "kb" / name)} for name in names},
    )
    settings = Settings(config=config, data_dir=root / "data", ollama_url="http://127.0.0.1:9")
    hub, live = start_indexed(settings, *names)
    yield live
    live.stop()
    hub.close()


@pytest.fixture
def ollama():
    """An Ollama on loopback (the protocol-faithful fake) that serves llama3 and answers "From the
    LLM.", for the direct tests of the replies an LLM writes."""
    with FakeOllama(chat_models=("llama3",)) as fake:
        fake.reply = "From the LLM."
        yield fake
