"""Text facts worked out where a document was read (rag_api.indexing.text_facts, as a reading
worker does): stored as the writer would have made them, the collection's repeated lines still
deciding boilerplate, and ignored when they were worked out for another language or chunk size."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api import payload
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.indexing.text_facts import TextFacts, text_facts
from rag_api.points.labels import Label
from rag_api.store import Selector
from rag_api.store.types import SparseVec
from tests.conftest import hash_collection, write_config

FOOTER = "Questions? Write to the help desk, open every weekday from nine to five."
CHUNK_SIZE = 200  # hash_collection's


@pytest.fixture
def open_docs(tmp_path: Path, make_settings, open_hub, engine: str):
    def opened(name: str) -> Hub:
        config = write_config(tmp_path / f"{name}.yaml", {"docs": hash_collection()})
        return open_hub(make_settings(config, engine, data_dir=tmp_path / name))

    return opened


def chunks_of(source: str, texts: list[str]) -> list[Chunk]:
    return [Chunk(text, source, n, title=f"About {source}") for n, text in enumerate(texts)]


def write(hub: Hub, chunks: list[Chunk], facts: TextFacts | None) -> None:
    collection = hub.collection("docs")
    scope = Selector(sources=(chunks[0].source,))
    provenance = {payload.ORIGIN: payload.FROM_API}
    write_documents(collection, [DocumentWrite(collection, scope, chunks, provenance, facts=facts)])


def stored(hub: Hub) -> dict[tuple[str, int], tuple]:
    """(source, chunk index) -> its labels and BM25 vector as stored."""
    physical = hub.collection("docs").info(refresh=True).physical
    out = {}
    for page in hub.store.export(physical):
        for point in page:
            body = point.payload
            labels = (
                body[payload.TYPE],
                body[payload.QUALITY],
                tuple(body[payload.QUALITY_REASONS]),
            )
            sparse = (tuple(point.sparse.indices), tuple(point.sparse.values))
            out[body[payload.SOURCE], body[payload.CHUNK_INDEX]] = (labels, sparse)
    return out


DOCUMENTS = {
    f"doc{i}": [f"Document {i} tells how tides rise twice a day along the coast.", FOOTER]
    for i in range(4)
}


def test_facts_worked_out_beside_the_reading_store_what_the_writer_makes(open_docs) -> None:
    """The footer is in every document: from the third on it is boilerplate, though each
    document's facts, worked out alone, call it prose."""
    with_facts, without = open_docs("with"), open_docs("without")
    for source, texts in DOCUMENTS.items():
        chunks = chunks_of(source, texts)
        write(with_facts, chunks, text_facts(chunks, "en", CHUNK_SIZE))
        write(without, chunks, None)

    assert stored(with_facts) == stored(without)
    types = {key: labels[0] for key, (labels, _) in stored(with_facts).items()}
    assert types[("doc3", 1)] == "boilerplate"
    assert text_facts(chunks_of("doc3", DOCUMENTS["doc3"]), "en", CHUNK_SIZE).labels[1].type == (
        "prose"
    )


def test_facts_are_what_is_stored_unless_worked_out_for_another_setup(open_docs) -> None:
    hub = open_docs("facts")
    marker = TextFacts(
        "en", CHUNK_SIZE, [Label("table", 0.42, ("truncated",))], [SparseVec([7, 9], [0.5, 0.25])]
    )
    write(hub, chunks_of("one", ["A chunk about reefs and the fish living there."]), marker)
    assert stored(hub)[("one", 0)] == (("table", 0.42, ("truncated",)), ((7, 9), (0.5, 0.25)))

    for other in (
        TextFacts("es", CHUNK_SIZE, marker.labels, marker.sparse),
        TextFacts("en", 512, marker.labels, marker.sparse),
        TextFacts("en", CHUNK_SIZE, marker.labels * 2, marker.sparse * 2),  # another document's
    ):
        chunks = chunks_of("two", ["Kelp forests grow fast in cold and clear water."])
        write(hub, chunks, other)
        labels, sparse = stored(hub)[("two", 0)]
        own = text_facts(chunks, "en", CHUNK_SIZE)
        assert labels == (own.labels[0].type, own.labels[0].quality, own.labels[0].reasons)
        assert sparse == (tuple(own.sparse[0].indices), tuple(own.sparse[0].values))
