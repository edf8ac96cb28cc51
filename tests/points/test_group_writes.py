"""Several documents written together (write_documents, as the indexing pipeline writes a group):
the same points, chunk numbers, counts and reused vectors as writing them one by one, each
document a new generation of its own, for each kind of document (an API source, a kb file, a
source's document: read and written in one engine operation each), and a document named twice in
one group ends as its last write says."""

from __future__ import annotations

import numpy as np
import pytest

from rag_api import payload
from rag_api.hub import Hub
from rag_api.indexing.chunking import Chunk
from rag_api.indexing.ingest import DocumentWrite, WriteStats, write_documents
from rag_api.points.generations import find_torn
from rag_api.points.write_batch import documents
from rag_api.store import Selector

KINDS = ["api", "file", "source"]


def write(hub: Hub, source: str, texts: list[str], kind: str = "api") -> DocumentWrite:
    """The write of document `source` as an API source, a kb file or a source's document."""
    collection = hub.collection("docs")
    name = f"wiki:{source}" if kind == "source" else source
    chunks = [Chunk(text, name, n) for n, text in enumerate(texts)]
    if kind == "file":
        provenance = payload.file_provenance(name, f"hash of {texts}", len(texts))
        scope = Selector(origin=payload.FROM_FILE, files=(name,))
    elif kind == "source":
        provenance = payload.source_provenance(f"hash of {texts}", len(texts), {}, None)
        scope = Selector(origin=payload.FROM_SOURCE, sources=(name,))
    else:
        provenance = {payload.ORIGIN: payload.FROM_API}
        scope = Selector(sources=(name,))
    return DocumentWrite(collection, scope, chunks, provenance)


def stored(hub: Hub) -> dict[str, tuple[str, str, int]]:
    return {
        r.id: (r.payload[payload.SOURCE], r.payload[payload.TEXT], r.payload[payload.SEQ])
        for r in records(hub)
    }


def records(hub: Hub) -> list:
    physical = hub.collection("docs").info(refresh=True).physical
    return list(hub.store.iter_records(physical, with_dense=True))


def generations(hub: Hub) -> dict[str, set[int]]:
    """Each document's generations (one, unless a replacement was cut short)."""
    found: dict[str, set[int]] = {}
    for record in records(hub):
        found.setdefault(record.payload[payload.SOURCE], set()).add(record.payload[payload.GEN])
    return found


FIRST = {
    "a": ["Alpha one is about tides.", "Alpha two is about reefs.", "Alpha three: kelp."],
    "b": ["Beta one is about storms.", "Beta two is about winds."],
}
SECOND = {
    "a": ["Alpha one is about tides."],  # two of its three chunks go
    "b": ["Beta one is about storms.", "Beta two now about calm.", "Beta three: fog."],
    "c": ["Gamma one is new here."],
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_group_written_at_once_stores_what_one_by_one_stores(open_docs, kind: str) -> None:
    together, apart = open_docs("together"), open_docs("apart")
    for hub in (together, apart):
        write_documents(hub.collection("docs"), [write(hub, s, t, kind) for s, t in FIRST.items()])
    first = generations(together)

    done: list[tuple[str, WriteStats]] = []
    stats = write_documents(
        together.collection("docs"),
        [write(together, s, t, kind) for s, t in SECOND.items()],
        on_done=lambda w, s: done.append((w.chunks[0].source, s)),
    )
    one_by_one = [
        write_documents(apart.collection("docs"), [write(apart, s, t, kind)])
        for s, t in SECOND.items()
    ]

    assert stored(together) == stored(apart)
    assert [(s.written, s.embedded, s.reused, s.deleted) for _, s in done] == [
        (s.written, s.embedded, s.reused, s.deleted) for s in one_by_one
    ]
    assert (stats.deleted, stats.written, stats.reused) == (2, 5, 2)  # a and b keep a vector each
    assert sorted(text for _, text, _ in stored(together).values()) == sorted(
        t for texts in SECOND.values() for t in texts
    )
    vectors = {r.id: r.dense for r in records(together)}
    assert all(np.array_equal(vectors[r.id], r.dense) for r in records(apart))
    now = generations(together)
    assert all(len(gens) == 1 for gens in now.values())  # each document whole, its own
    assert all(min(now[name]) > max(gens) for name, gens in first.items())
    docs = together.collection("docs")
    assert find_torn(together.store, docs.info().physical) == []
    # each chunk numbered once, its BM25 vector written beside its dense one
    seqs = [seq for _, _, seq in stored(together).values()]
    assert all(isinstance(seq, int) for seq in seqs) and len(set(seqs)) == len(seqs)
    physical = docs.info().physical
    assert together.store.count(physical, Selector(has_sparse=True)) == stats.written


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


FILE_A = Selector(origin=payload.FROM_FILE, files=("a.md",))
FILE_B = Selector(origin=payload.FROM_FILE, files=("b.md",))


@pytest.mark.parametrize(
    ("scopes", "merged"),
    [
        ([FILE_B, FILE_A], (Selector(origin="file", files=("a.md", "b.md")), payload.FILE)),
        (
            [Selector(sources=("x",)), Selector(sources=("y",))],
            (Selector(sources=("x", "y")), payload.SOURCE),
        ),
        ([FILE_A], None),  # one document: replaced alone
        ([FILE_A, FILE_A], None),  # named twice: in turn
        ([FILE_A, Selector(origin=payload.FROM_API, files=("b.md",))], None),  # another origin
        ([FILE_A, Selector(ids=("p1",))], None),  # not a whole document
        ([FILE_A, Selector(origin="file", files=("b.md", "c.md"))], None),  # two documents
        ([Selector(files=("a",), sources=("s",)), Selector(files=("a",), sources=("t",))], None),
    ],
)
def test_only_whole_documents_of_one_kind_each_named_once_are_read_together(scopes, merged) -> None:
    assert documents(scopes) == merged
