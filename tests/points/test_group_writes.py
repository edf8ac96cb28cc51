"""Several documents written together (write_documents, as the indexing pipeline writes a group):
the same points, chunk numbers and counts as writing them one by one, and a document named twice
in one group ends as its last write says."""

from __future__ import annotations

from rag_api import payload
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, write_documents
from rag_api.store import Selector


def write(hub: Hub, source: str, texts: list[str]) -> DocumentWrite:
    collection = hub.collection("docs")
    chunks = [Chunk(text, source, n) for n, text in enumerate(texts)]
    provenance = {payload.ORIGIN: payload.FROM_API}
    return DocumentWrite(collection, Selector(sources=(source,)), chunks, provenance)


def stored(hub: Hub) -> dict[str, tuple[str, str, int]]:
    physical = hub.collection("docs").info(refresh=True).physical
    return {
        r.id: (r.payload[payload.SOURCE], r.payload[payload.TEXT], r.payload[payload.SEQ])
        for r in hub.store.iter_records(physical)
    }


FIRST = {
    "a": ["Alpha one is about tides.", "Alpha two is about reefs.", "Alpha three: kelp."],
    "b": ["Beta one is about storms.", "Beta two is about winds."],
}
SECOND = {
    "a": ["Alpha one is about tides."],  # two of its three chunks go
    "b": ["Beta one is about storms.", "Beta two now about calm.", "Beta three: fog."],
    "c": ["Gamma one is new here."],
}


def test_a_group_written_at_once_stores_what_one_by_one_stores(open_docs) -> None:
    together, apart = open_docs("together"), open_docs("apart")
    for hub in (together, apart):
        write_documents(hub.collection("docs"), [write(hub, s, t) for s, t in FIRST.items()])

    stats = write_documents(
        together.collection("docs"), [write(together, s, t) for s, t in SECOND.items()]
    )
    one_by_one = [
        write_documents(apart.collection("docs"), [write(apart, s, t)]) for s, t in SECOND.items()
    ]

    assert stored(together) == stored(apart)
    assert stats.deleted == sum(s.deleted for s in one_by_one) == 2
    assert stats.written == 5
    assert sorted(text for _, text, _ in stored(together).values()) == sorted(
        t for texts in SECOND.values() for t in texts
    )


def test_a_document_twice_in_one_group_ends_as_its_last_replacement(open_docs) -> None:
    hub = open_docs("twice")
    docs = hub.collection("docs")
    write_documents(docs, [write(hub, "a", FIRST["a"])])
    seen = []

    write_documents(
        docs,
        [write(hub, "a", ["Alpha four replaces all.", "Alpha five too."]), write(hub, "a", ["Z."])],
        on_done=lambda w, s: seen.append((s.written, s.deleted)),
    )

    assert [text for _, text, _ in stored(hub).values()] == ["Z."]
    assert seen == [(2, 1), (1, 1)]  # 3 -> 2 (one left over), then 2 -> 1
