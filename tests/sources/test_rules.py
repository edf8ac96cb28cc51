"""What holds for every kind of source: collections never see each other's sources, a file put in
the kb folder by hand is never touched by a sync (nor a source's documents by the folder's), a
mass of removals waits for --prune, and a writer killed mid-sync converges at the next sync with
no duplicate and no half-written document."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from tests.conftest import LOCAL_ENGINES, hash_collection, wait_for, write_config
from tests.sources.conftest import documents, sync, web_block
from tests.sources.test_git import FILES, git_block
from tests.support.git_repo import Repo
from tests.support.site import Site, docs_site


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "repos" / "handbook")
    made.write(FILES).commit("first")
    return made


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_collections_never_see_each_others_sources(engine, site, repo, source_hub) -> None:
    # the same source name in two collections, and another source beside it in one
    hub = source_hub(
        git_block(str(repo.path), name="help"),
        engine=engine,
        others=[web_block(site, url=None)],
    )
    sync(hub, "help", "docs")
    sync(hub, "help", "others")
    docs, others = documents(hub, "docs"), documents(hub, "others")
    assert docs and all(name.startswith("help:docs/") or name == "help:README.md" for name in docs)
    assert others and all(name.startswith(f"help:{site.url}/") for name in others)
    repo.delete("README.md").commit()
    assert sync(hub, "help", "docs").removed == ["README.md"]
    assert documents(hub, "others") == others
    asked = SearchRequest("Topic 3 lantern protocol installer", top_k=20)  # words of both
    for name, prefix in (("docs", "help:docs/"), ("others", f"help:{site.url}/")):
        passages = search(hub.collection(name), asked).passages
        assert passages and all(p.source.startswith(prefix) for p in passages)


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_a_file_put_by_hand_survives_every_sync(engine, tmp_path, repo, source_hub) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "README.md").write_text("# Mine\n\nA note put in the folder by hand.\n")  # same key
    hub = source_hub(git_block(str(repo.path)), engine=engine, kb=kb)
    collection = hub.collection("docs")
    assert sync_collection(collection).indexed == 1
    sync(hub)
    for path in list(FILES):
        if not path.startswith("src/") and not path.endswith(".hidden.md"):
            repo.delete(path)
    repo.commit("everything gone")
    assert sync(hub, prune=True).removed  # the source's documents, all of them
    held = documents(hub)
    assert list(held) == ["README.md"] and "by hand" in held["README.md"][0].text
    # and the folder's reconcile never touches a source's documents
    repo.write({"docs/back.md": "# Back\n\nA page back in the repository.\n"}).commit()
    sync(hub)
    (kb / "README.md").unlink()
    assert sync_collection(collection).removed == 1
    assert list(documents(hub)) == ["handbook:docs/back.md"]


def test_a_mass_of_removals_waits_for_prune(repo, source_hub) -> None:
    repo.write({f"docs/notes/n{n:02}.md": f"# Note {n}\n\nNote number {n}.\n" for n in range(12)})
    repo.commit()
    hub = source_hub(git_block(str(repo.path)))
    assert sync(hub).indexed == 16
    for n in range(10):
        repo.delete(f"docs/notes/n{n:02}.md")
    repo.commit("most notes gone")
    held = sync(hub)
    assert not held.removed and "lacks 10 of 16 documents" in held.held and "--prune" in held.held
    assert len(documents(hub)) == 16
    assert len(sync(hub, prune=True).removed) == 10


def snapshot(settings: Settings) -> dict[tuple[str, int], dict]:
    """Every chunk by (source, chunk_index); fails on a duplicate or a half-written document."""
    hub = Hub.open(settings)
    try:
        held = documents(hub)
    finally:
        hub.close()
    chunks = {}
    for name, parts in held.items():
        assert len(parts) == parts[0].file_chunks, f"{name}: half written"
        assert len({c.doc_hash for c in parts}) == 1, f"{name}: two versions"
        for chunk in parts:
            key = (name, chunk.chunk_index)
            assert key not in chunks, f"duplicate {key}"
            chunks[key] = chunk.raw
    return chunks


@pytest.mark.slow
def test_a_writer_killed_mid_sync_converges_at_the_next_sync(tmp_path, spawn) -> None:
    with Site() as site:
        docs_site(site, pages=200)
        block = web_block(site, rate=60)  # slow enough to be killed half-way
        config = write_config(
            tmp_path / "collections.yaml", {"docs": hash_collection(None, sources=[block])}
        )
        settings = Settings(config=config, data_dir=tmp_path / "data")
        env = {"RAG_CONFIG": str(config), "RAG_DATA_DIR": str(settings.data_dir)}
        first = spawn("-v", "sync", "docs", env=env)
        wait_for(lambda: first.count("docs: indexed") >= 10, 60, interval=0.01)
        first.stop(signal.SIGKILL)
        assert first.count("docs: indexed") < 150, "the kill came too late to test anything"

        hub = Hub.open(settings)  # recovers what the kill tore, then the sync finishes the rest
        try:
            report = sync(hub)
        finally:
            hub.close()
        assert report.unchanged >= 10 and report.indexed + report.unchanged == report.listed
        crashed = snapshot(settings)

        clean_settings = Settings(config=config, data_dir=tmp_path / "clean")
        hub = Hub.open(clean_settings)
        try:
            sync(hub)
        finally:
            hub.close()
        clean = snapshot(clean_settings)
    assert crashed.keys() == clean.keys()
    fields = ("text", "content_hash", "doc_hash", "file_chunks", "url", "origin", "embedder")
    for key, payload in crashed.items():
        assert {f: payload.get(f) for f in fields} == {f: clean[key].get(f) for f in fields}, key
