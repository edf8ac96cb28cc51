"""Live edits under live searches: a search never sees a document missing, doubled or mixed."""

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest

from rag_api.config import ChunkingConfig
from rag_api.indexing.chunking import split_text
from tests.conftest import LiveServer, hash_collection, write_config

SEARCHERS = 8
VERSIONS = 50
WORDS = "invoice refund delivery warranty"


CHUNKING = ChunkingConfig(size=200, overlap=0)
TAG = re.compile(r"\bv(\d+)\b")


def version_text(version: int) -> str:
    """Version v: 2-4 paragraphs (the count varies, so replacements add and delete chunks), every
    few words tagged with its version, all sharing the query's words."""
    paragraph = " ".join([f"{WORDS} v{version}"] * 4)
    return "\n\n".join([paragraph] * (2 + version % 3))


def chunks_of(version: int) -> int:
    return len(split_text(version_text(version), CHUNKING))


# source evidence ranks the hits by their sources, then reads the kept ones whole: both reads must
# see one state of the collection
@pytest.mark.parametrize("evidence", [0.0, 0.03])
@pytest.mark.slow
def test_searches_see_exactly_one_version_while_upserts_and_moves_run(
    tmp_path: Path, engine: str, make_settings, serve, evidence: float
) -> None:
    chunking = CHUNKING.model_dump()
    retrieval = {"top_k": 20, "candidates": 20, "source_evidence": evidence}
    entry = hash_collection(chunking=chunking, retrieval=retrieval)
    config = write_config(tmp_path / "c.yaml", {"docs": entry})
    server: LiveServer = serve(make_settings(config, engine))
    url = server.url + "/v1/rag"
    with httpx.Client(base_url=url, timeout=60) as admin:
        admin.post("/upsert/document", json={"source": "doc", "text": version_text(0)})
        moving = admin.post("/add/document", json={"source": "move/a", "text": f"{WORDS} mover"})
        assert moving.status_code == 200
    done = threading.Event()
    seen: Counter[str] = Counter()
    problems: list[str] = []

    def search_forever() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            while not done.is_set():
                for prefix in ("doc", "move/"):
                    body = {"query": WORDS, "threshold": -1, "filters": {"source_prefix": prefix}}
                    response = http.post("/search", json=body)
                    if response.status_code != 200:
                        problems.append(f"{response.status_code} {response.text[:200]}")
                        continue
                    results = response.json()["results"]
                    if prefix == "move/":
                        seen["moves"] += 1
                        if len(results) != 1:
                            problems.append(f"the moving chunk appeared {len(results)} times")
                        continue
                    versions = {int(v) for r in results for v in TAG.findall(r["text"])}
                    seen["searches"] += 1
                    if len(versions) != 1:
                        problems.append(f"versions {sorted(versions)} in one search")
                    elif len(results) != chunks_of(versions.pop()):
                        problems.append(f"{len(results)} chunks of one version")

    def edit() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            for version in range(1, VERSIONS + 1):
                body = {"source": "doc", "text": version_text(version)}
                response = http.post("/upsert/document", json=body)
                if response.status_code != 200:
                    problems.append(f"upsert {response.status_code} {response.text[:200]}")
                source, target = ("move/a", "move/b") if version % 2 else ("move/b", "move/a")
                move = {"source": source, "new_source": target}
                response = http.post("/chunks/update", json=move)
                if response.status_code != 200:
                    problems.append(f"move {response.status_code} {response.text[:200]}")

    searchers = [threading.Thread(target=search_forever) for _ in range(SEARCHERS)]
    for thread in searchers:
        thread.start()
    edit()
    done.set()
    for thread in searchers:
        thread.join(timeout=60)
    assert not problems, problems[:5]
    assert seen["searches"] >= SEARCHERS and seen["moves"] >= SEARCHERS
    with httpx.Client(base_url=url, timeout=60) as http:
        final = http.post("/search", json={"query": WORDS, "threshold": -1}).json()["results"]
    assert sorted(r["source"] for r in final) == ["doc"] * chunks_of(VERSIONS) + ["move/a"]
