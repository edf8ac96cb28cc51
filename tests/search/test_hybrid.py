"""Hybrid retrieval with the real MiniLM model: exact terms dense misses are found by BM25 and by
the fusion; both engines return the same results; HTTP and CLI say why each passage came back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.indexing.sync import sync_collection
from rag_api.search.passage import Passage
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from rag_api.store import Selector
from tests.conftest import (
    LOCAL_ENGINES,
    REPO,
    hash_collection,
    minilm_collection,
    repo_yaml,
    run_cli,
    write_config,
)

CORPUS = {
    "bitcoin/segwit.md": "Segregated Witness (SegWit) moves signature data out of the "
    "transaction body into a separate witness structure, which fixes transaction malleability.",
    "bitcoin/p2sh.md": "Pay to Script Hash (P2SH) lets a sender pay to the hash of a redeem "
    "script; the receiver reveals the script and its signatures when spending.",
    "bitcoin/utxo.md": "Every UTXO is an unspent transaction output: an amount locked to a "
    "script that can be spent exactly once as the input of a later transaction.",
    "bitcoin/fees.md": "Transaction fees are paid per virtual byte; wallets estimate the fee "
    "rate from the mempool so the transaction confirms within a few blocks.",
    "bitcoin/mining.md": "Miners collect transactions into blocks and search for a nonce whose "
    "block hash is below the difficulty target; the winner earns the block reward.",
    "errors/e1.md": "Error QX-7714 appears when the printer driver cannot reach the spooler. "
    "Restart the print service and try again.",
    "errors/e2.md": "Error QX-7741 appears when the license server refuses the seat count. "
    "Ask your administrator to free a seat.",
    "errors/e3.md": "Error QX-1477 appears when the disk quota is exceeded during sync. "
    "Delete old attachments to free space.",
    "errors/e4.md": "Error QX-4177 appears when the session token expires during upload. "
    "Sign in again and retry the upload.",
    "errors/e5.md": "Error QX-7147 appears when the scanner firmware is older than the app "
    "expects. Update the scanner firmware.",
    "errors/e6.md": "Error QX-1747 appears when the receipt template has an unknown field. "
    "Reset the template to its default.",
}
# Codes that differ only in digit order: an embedding barely tells them apart, BM25 does.
EXACT = {
    "What is P2SH?": "bitcoin/p2sh.md",
    "SegWit": "bitcoin/segwit.md",
    "UTXO": "bitcoin/utxo.md",
    "QX-7741": "errors/e2.md",
    "what does QX-4177 mean": "errors/e4.md",
    "QX-7714 fix": "errors/e1.md",
    "QX-1477": "errors/e3.md",
    "QX-7147": "errors/e5.md",
    "how do I solve QX-1747": "errors/e6.md",
}
KB_QUESTIONS = repo_yaml("tests/data/kb_questions.yaml")["docs"]


def index(hub: Hub) -> None:
    collection = hub.collection("kb")
    writes = [
        DocumentWrite(collection, Selector(sources=(source,)), [Chunk(text, source, 0)])
        for source, text in CORPUS.items()
    ]
    write_documents(collection, writes)
    sync_collection(hub.collection("docs"))


@pytest.fixture(scope="module")
def hubs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Hub]]:
    """The same MiniLM collection on each engine, indexed once for the module."""
    opened: dict[str, Hub] = {}
    for engine in LOCAL_ENGINES:
        root = tmp_path_factory.mktemp(f"hybrid-{engine}")
        entries = {
            "kb": minilm_collection(
                retrieval={"threshold": 0.0, "top_k": 5, "fusion": "rrf", "side_weights": "equal"}
            ),
            "docs": minilm_collection(REPO / "kb/docs", chunking={"size": 512, "overlap": 64}),
        }
        config = write_config(root / "collections.yaml", entries)
        settings = Settings(
            config=config,
            data_dir=root / "data",
            qdrant_url=None if engine == "edge" else ":memory:",
            ollama_url="http://127.0.0.1:9",
        )
        opened[engine] = Hub.open(settings)
        index(opened[engine])
    yield opened
    for hub in opened.values():
        hub.close()


def first_source(hub: Hub, question: str, mode: str) -> str | None:
    passages = search(hub.collection("kb"), SearchRequest(question, mode=mode)).passages
    return passages[0].source if passages else None


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_exact_terms_dense_misses_are_found_by_sparse_and_hybrid(
    hubs: dict[str, Hub], engine: str
) -> None:
    hub = hubs[engine]
    found = {
        mode: {q for q, source in EXACT.items() if first_source(hub, q, mode) == source}
        for mode in ("dense", "sparse", "hybrid")
    }
    assert found["sparse"] == set(EXACT)
    assert found["hybrid"] == set(EXACT)
    missed_by_dense = set(EXACT) - found["dense"]
    assert len(missed_by_dense) >= 3, missed_by_dense  # the reason hybrid exists


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_both_engines_return_the_same_results(hubs: dict[str, Hub], mode: str) -> None:
    for item in KB_QUESTIONS:
        edge, memory = (
            search(hubs[engine].collection("docs"), SearchRequest(item["question"], mode=mode))
            for engine in LOCAL_ENGINES
        )
        assert edge.mode == memory.mode == mode
        if mode == "hybrid":
            assert_same_evidence(edge.passages, memory.passages, item["question"])
        else:
            assert_congruent(edge.passages, memory.passages, item["question"])


def assert_same_evidence(edge: list[Passage], memory: list[Passage], question: str) -> None:
    """Hybrid: RRF scores ranks, and when BM25 ties two chunks each engine ranks them its own way,
    which moves their fused scores by a rank. So: the same best passage, at most one passage of
    difference at the cut, and identical dense and BM25 scores for every passage both returned."""
    assert edge[0].id == memory[0].id, question
    found = {p.id: p for p in memory}
    common = [p for p in edge if p.id in found]
    assert len(common) >= len(edge) - 1, question
    for passage in common:
        assert sides(passage) == pytest.approx(sides(found[passage.id]), rel=1e-4, abs=1e-6)


def assert_congruent(edge: list[Passage], memory: list[Passage], question: str) -> None:
    """The same passages with the same scores, in the same order up to exact score ties (each
    engine breaks those its own way: BM25 often ties chunks that share one query term)."""
    assert [p.score for p in edge] == pytest.approx([p.score for p in memory], rel=1e-4), question
    edge_ties, memory_ties = tie_groups(edge), tie_groups(memory)
    assert edge_ties[:-1] == memory_ties[:-1], question  # the last group may be cut by top_k
    assert len(edge_ties[-1]) == len(memory_ties[-1]), question
    found = {p.id: p for p in memory}
    for passage in edge:
        twin = found.get(passage.id)
        assert twin is not None or passage.id in edge_ties[-1], question
        if twin is not None:
            assert sides(passage) == pytest.approx(sides(twin), rel=1e-4, abs=1e-6), question


def tie_groups(passages: list[Passage]) -> list[set[str]]:
    """Point ids grouped by equal score, in ranking order."""
    groups: list[tuple[float, set[str]]] = []
    for p in passages:
        if groups and p.score == pytest.approx(groups[-1][0], rel=1e-6):
            groups[-1][1].add(p.id)
        else:
            groups.append((p.score, {p.id}))
    return [ids for _, ids in groups]


def sides(passage: Passage) -> list[float]:
    return [passage.dense_score or 0.0, passage.sparse_score or 0.0]


def test_http_results_say_why_they_were_returned(hubs: dict[str, Hub], serve) -> None:
    hub = hubs["edge"]
    with serve(hub.settings, hub).client() as client:
        response = client.post(
            "/query/kb",
            json={"query": "QX-7741", "mode": "hybrid", "generate": False, "diversity": 0.0},
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["mode"] == "hybrid"
    best = body["sources"][0]
    assert best["source"] == "errors/e2.md"
    assert best["sparse_rank"] == 1 and best["sparse_score"] > 0
    assert best["dense_score"] > 0 and best["dense_rank"] >= 1
    assert best["score"] == pytest.approx(
        1 / (60 + best["dense_rank"]) + 1 / (60 + best["sparse_rank"]), abs=1e-6
    )
    assert best["rerank_score"] is None


@pytest.mark.slow
def test_cli_query_takes_mode_filters_and_diversity(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for source, text in CORPUS.items():
        (kb / source.replace("/", "-")).write_text(text, encoding="utf-8")
    # the flags are the point here, not the model: the fast test embedder will do
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection(kb)})
    env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(tmp_path / "data")}
    assert run_cli("index", env=env).returncode == 0
    args = ["query", "kb", "QX-7741", "--no-generate", "--no-rerank", "--diversity", "0.3"]
    done = run_cli(*args, "--mode", "sparse", "--json", env=env)
    assert done.returncode == 0, done.stderr
    response = json.loads(done.stdout)
    assert response["mode"] == "sparse" and response["sources"][0]["source"] == "errors-e2.md"
    done = run_cli(*args, "--source-prefix", "bitcoin", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mode: hybrid"
    assert lines[1:] and all(line.split()[1].startswith("bitcoin-") for line in lines[1:])
    assert "dense=" in lines[1]
