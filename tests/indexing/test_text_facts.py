"""Text facts worked out where a document was read (rag_api.indexing.text_facts, as a reading
worker does): stored as the writer would have made them, the collection's repeated lines still
deciding boilerplate, and ignored when they were worked out for another language or chunk size."""

from __future__ import annotations

from rag_api import payload
from rag_api.embedding.bm25 import sparse_encoder
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.indexing.text_facts import TextFacts, text_facts
from rag_api.points.labels import Label
from rag_api.store import Selector
from rag_api.store.types import SparseVec

FOOTER = "Questions? Write to the help desk, open every weekday from nine to five."
CHUNK_SIZE = 200  # hash_collection's


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


def vector(sparse: SparseVec) -> dict[int, float]:
    return dict(zip(sparse.indices, sparse.values, strict=True))


def test_facts_are_each_chunks_labels_in_the_collections_language_and_its_metadata() -> None:
    spanish = "El mar sube dos veces al día en la costa y los pescadores de la zona lo saben porque es su trabajo."
    chunks = [
        Chunk(spanish, "a.md", 0),
        Chunk(spanish, "a.md", 1, metadata={"ocr_confidence": 0.5}),
    ]
    facts = text_facts(chunks, "en", CHUNK_SIZE)

    assert facts.fit(chunks, "en", CHUNK_SIZE)
    assert not facts.fit(chunks, "es", CHUNK_SIZE) and not facts.fit(chunks[:1], "en", CHUNK_SIZE)
    assert "other_language" in facts.labels[0].reasons  # Spanish in an English collection
    assert "other_language" not in text_facts(chunks, "es", CHUNK_SIZE).labels[0].reasons
    in_spanish = text_facts(chunks, "es", CHUNK_SIZE).sparse[0]  # Spanish stems and stop words
    assert in_spanish == sparse_encoder("es", CHUNK_SIZE).document(spanish)
    assert in_spanish != facts.sparse[0]
    assert "low_ocr_confidence" in facts.labels[1].reasons
    assert facts.labels[1].quality < facts.labels[0].quality


def test_every_chunk_is_encoded_with_its_documents_title() -> None:
    """BM25 counts a document's title with each of its chunks: the title its reader found, else
    its title line; documents apart, each with its own."""
    tides = [
        Chunk("Tide tables\n\nThe sea rises twice a day.", "tides.md", 0),
        Chunk("Sailors read them before leaving port.", "tides.md", 1),
    ]
    reefs = [Chunk("# Not the title\n\nCorals build reefs.", "reefs.md", 0, title="Coral atlas")]
    body = [Chunk("Kelp grows fast in cold water, and more text follows it.", "kelp.md", 0)]
    facts = text_facts(tides + reefs + body, "en", CHUNK_SIZE)
    encoder = sparse_encoder("en", CHUNK_SIZE)

    assert [vector(v) for v in facts.sparse] == [
        vector(encoder.document(tides[0].text, "Tide tables")),
        vector(encoder.document(tides[1].text, "Tide tables")),
        vector(encoder.document(reefs[0].text, "Coral atlas")),
        vector(encoder.document(body[0].text, None)),  # no title line: its body alone
    ]
    assert set(vector(facts.sparse[1])) > set(vector(encoder.document(tides[1].text, None)))
    assert facts.sparse[3] == encoder.document(body[0].text, None)
    assert (facts.language, facts.chunk_size) == ("en", CHUNK_SIZE)
