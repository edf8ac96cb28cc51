"""The BM25 encoder per language (stemming and stop words), the document's title line counted with
every chunk, and that a written, repaired or copied chunk gets the same BM25 vector."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag_api.embedding.bm25 import lexical_text, sparse_encoder
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk, title_line
from rag_api.payload import StoredChunk
from rag_api.search.retrieval import SearchRequest, search
from rag_api.settings import Settings
from rag_api.store import Selector
from tests.conftest import hash_collection, write_config
from tests.support.writes import replace_source


@pytest.mark.parametrize(
    ("language", "inflected", "base"),
    [
        ("en", "the cats were running to the cities", "cat run city"),
        ("es", "los gatos corrían en la ciudad", "gato correr ciudad"),
        ("it", "i gatti corrono nella città", "gatto corre città"),
    ],
)
def test_each_language_stems_and_drops_its_stop_words(
    language: str, inflected: str, base: str
) -> None:
    encoder = sparse_encoder(language)
    assert encoder.terms(inflected) == encoder.terms(base)
    assert len(encoder.terms(base)) == 3  # the articles and prepositions are gone


def test_title_line_is_a_short_first_line_followed_by_more_text() -> None:
    assert (
        title_line(["Aspirin and bleeding\n\nA trial of 300 patients."]) == "Aspirin and bleeding"
    )
    assert title_line(["# Refund policy\n\nRefunds within 30 days."]) == "# Refund policy"
    # a title long enough to be a chunk of its own is still the document's title
    assert title_line(["A title alone", "the body, next chunk"]) == "A title alone"
    assert title_line(["A document that starts with its body and has one chunk."]) is None
    assert title_line(["two lines\nof body\n\nmore"]) is None
    assert title_line(["x" * 201 + "\n\nbody"]) is None
    assert title_line([]) is None


def test_lexical_text_adds_the_title_unless_the_chunk_starts_with_it() -> None:
    assert lexical_text("Title\n\nbody", "Title") == "Title\n\nbody"
    assert lexical_text("later body", "Title") == "Title\n\nlater body"
    assert lexical_text("body", None) == "body"


@pytest.fixture
def hub(make_settings: Callable[..., Settings], open_hub, tmp_path: Path) -> Hub:
    config = write_config(tmp_path / "collections.yaml", {"kb": hash_collection()})
    return open_hub(make_settings(config, "edge"))


def test_every_chunk_of_a_titled_document_matches_its_title(hub: Hub) -> None:
    kb = hub.collection("kb")
    chunks = ["Zeolite catalysts\n\nPores trap molecules.", "Acidity drives cracking."]
    replace_source(kb, "zeo.md", [Chunk(t, "zeo.md", i) for i, t in enumerate(chunks)], {})
    replace_source(kb, "plain.md", [Chunk("Acidity of lemons.", "plain.md", 0)], {})
    outcome = search(kb, SearchRequest("zeolite", mode="sparse", top_k=10))
    assert sorted(p.chunk_index for p in outcome.passages if p.source == "zeo.md") == [0, 1]
    assert {p.source for p in outcome.passages} == {"zeo.md"}
    second = next(p for p in outcome.passages if p.chunk_index == 1)
    assert second.text == "Acidity drives cracking."  # the title is indexed, not added to the text
    assert second.stored.title == "Zeolite catalysts"
    plain = next(r for r in kb.scan(Selector(sources=("plain.md",))))
    assert StoredChunk(plain.payload).title is None


def test_a_stored_chunk_is_re_encoded_as_it_was_written(hub: Hub) -> None:
    """Repair and copy re-encode from the payload (Collection.sparse_of): title included."""
    kb = hub.collection("kb")
    chunks = ["Zeolite catalysts\n\nPores trap molecules.", "Acidity drives cracking."]
    replace_source(kb, "zeo.md", [Chunk(t, "zeo.md", i) for i, t in enumerate(chunks)], {})
    record = next(r for r in kb.scan(Selector(sources=("zeo.md",))) if r.payload["chunk_index"])
    expected = kb.sparse.document("Zeolite catalysts\n\nAcidity drives cracking.")
    assert kb.sparse_of(record.payload) == expected
    assert kb.sparse_of(record.payload) != kb.sparse.document("Acidity drives cracking.")
