"""Documents and passages by id, as fetch and upsert_document read them (rag_api.mcp.documents),
on a real hub in process: an id is `collection:source#chunk_index` or `collection:source`, only
its first ':' ends the collection, a source may end in '#<n>' itself, a document is its first
thousand passages joined with its count, a synced page keeps its own address, and what is
missing is named. written_ids lists the API's passages of a document, in order, past a page."""

from __future__ import annotations

import pytest

from rag_api.access.grant import Grant, Principal, current
from rag_api.errors import ChunkNotFound, CollectionNotFound, DocumentNotFound, InvalidRequest
from rag_api.hub import Hub
from rag_api.kbadmin.chunks import DYNAMIC_BASE
from rag_api.kbadmin.models import UpsertDocument
from rag_api.mcp import documents
from rag_api.payload import StoredChunk
from tests.mcp.conftest import GARAGE, HOURS

NOT_AN_ID = (
    "is not an id from search: ids are 'collection:source#chunk_index' (a passage) or "
    "'collection:source' (a document)"
)


def stored(hub: Hub, collection: str, source: str) -> list[str]:
    """The texts of a document's passages as the store holds them, by chunk_index."""
    chunks = [StoredChunk(r.payload) for r in hub.collection(collection).scan()]
    return [c.text for c in sorted(chunks, key=lambda c: c.chunk_index) if c.source == source]


def numbered(ids: list[str], prefix: str) -> list[int]:
    """The chunk_index of each id, checked to be `prefix#<n>`."""
    assert all(id.startswith(f"{prefix}#") for id in ids), ids
    return [int(id.removeprefix(f"{prefix}#")) for id in ids]


def write(hub: Hub, collection: str, source: str, text: str, **metadata: object) -> list[str]:
    """Upsert a document through the hub's API; its passages' ids."""
    hub.kb.upsert_document(
        UpsertDocument(collection=collection, source=source, text=text, metadata=metadata)
    )
    return documents.written_ids(hub, collection, source)


@pytest.mark.parametrize("id", ["faq.md", ":faq.md", "docs:", ":"])
def test_an_id_without_a_collection_and_a_source_is_refused_as_not_an_id(mcp_hub, id) -> None:
    with pytest.raises(InvalidRequest) as refused:
        documents.fetch(mcp_hub, id)
    assert refused.value.message == f"id: '{id}' {NOT_AN_ID}"
    assert refused.value.param == "id"


def test_a_long_id_is_named_by_its_first_eighty_characters(mcp_hub) -> None:
    with pytest.raises(InvalidRequest) as refused:
        documents.fetch(mcp_hub, "x" * 200)
    assert refused.value.message == f"id: '{'x' * 80}' {NOT_AN_ID}"


def test_a_passage_id_reads_that_passage_of_a_long_document(mcp_hub) -> None:
    passages = stored(mcp_hub, "docs", "parking.md")
    assert len(passages) == 4
    for index, text in enumerate(passages):
        assert documents.fetch(mcp_hub, f"docs:parking.md#{index}") == {
            "id": f"docs:parking.md#{index}",
            "title": "parking.md",
            "collection": "docs",
            "source": "parking.md",
            "chunk_index": index,
            "text": text,
            "metadata": {},
        }


def test_a_document_id_reads_its_passages_joined_in_order_and_counts_them(mcp_hub) -> None:
    assert documents.fetch(mcp_hub, "docs:parking.md") == {
        "id": "docs:parking.md",
        "title": "parking.md",
        "collection": "docs",
        "source": "parking.md",
        "chunks": 4,
        "text": "\n\n".join(stored(mcp_hub, "docs", "parking.md")),
        "metadata": {},
    }


def test_a_passage_and_a_document_of_a_synced_page_carry_the_pages_address(mcp_hub) -> None:
    (source,) = {StoredChunk(r.payload).source for r in mcp_hub.collection("site").scan()}
    page = source.removeprefix("help:")
    passage = documents.fetch(mcp_hub, f"site:{source}#0")
    assert (passage["url"], passage["source"], passage["chunk_index"]) == (page, source, 0)
    assert passage["text"].endswith(HOURS)
    document = documents.fetch(mcp_hub, f"site:{source}")
    assert (document["url"], document["chunks"]) == (page, 1)


def test_the_metadata_of_a_written_document_comes_with_its_passages_and_the_document(
    mcp_hub,
) -> None:
    ids = write(mcp_hub, "notes", "crm:2024/acme.md", GARAGE, tier="gold", seats=40)
    first = numbered(ids, "notes:crm:2024/acme.md")[0]
    assert ids == [f"notes:crm:2024/acme.md#{first + n}" for n in range(4)]  # an API document's
    assert first >= DYNAMIC_BASE
    texts = stored(mcp_hub, "notes", "crm:2024/acme.md")
    third = documents.fetch(mcp_hub, ids[2])
    assert (third["source"], third["text"]) == ("crm:2024/acme.md", texts[2])
    assert third["metadata"] == {"tier": "gold", "seats": 40}
    whole = documents.fetch(mcp_hub, "notes:crm:2024/acme.md")
    assert (whole["metadata"], whole["chunks"]) == (third["metadata"], 4)
    assert whole["text"] == "\n\n".join(texts)
    assert "url" not in whole and "url" not in third


def test_a_document_named_with_a_hash_and_a_number_is_read_whole_by_its_name(mcp_hub) -> None:
    (id,) = write(mcp_hub, "notes", "release#2", "Release two ships in May.")
    assert numbered([id], "notes:release#2")[0] >= DYNAMIC_BASE
    assert documents.fetch(mcp_hub, id)["text"] == "Release two ships in May."
    whole = documents.fetch(mcp_hub, "notes:release#2")
    assert (whole["id"], whole["source"], whole["chunks"], whole["text"]) == (
        "notes:release#2",
        "release#2",
        1,
        "Release two ships in May.",
    )
    with pytest.raises(DocumentNotFound) as missing:
        documents.fetch(mcp_hub, "notes:release#3")
    assert missing.value.message == (
        "collection 'notes' has no document 'release' (search lists what it holds)"
    )


@pytest.mark.parametrize(
    ("id", "error", "said"),
    [
        ("docs:nope.md", DocumentNotFound,
         "collection 'docs' has no document 'nope.md' (search lists what it holds)"),
        ("docs:nope.md#0", DocumentNotFound,
         "collection 'docs' has no document 'nope.md' (search lists what it holds)"),
        ("docs:parking.md#9", ChunkNotFound,
         "the document 'parking.md' of collection 'docs' has no passage 9 (fetch "
         "'docs:parking.md' reads the whole document)"),
        ("nope:faq.md", CollectionNotFound,
         "collection 'nope' is not configured in collections.yaml"),
    ],
)  # fmt: skip
def test_what_is_missing_is_named(mcp_hub, id, error, said) -> None:
    with pytest.raises(error) as missing:
        documents.fetch(mcp_hub, id)
    assert missing.value.message == said


def test_a_collection_the_key_may_not_read_is_not_found(mcp_hub) -> None:
    token = current.set(Grant(Principal("k", "spanish desk", frozenset({"soporte"})), "read"))
    try:
        with pytest.raises(CollectionNotFound):
            documents.fetch(mcp_hub, "docs:faq.md#0")
        assert documents.fetch(mcp_hub, "soporte:faq.md#0")["collection"] == "soporte"
    finally:
        current.reset(token)


def test_written_ids_are_the_apis_passages_not_a_kb_files_of_the_same_name(mcp_hub) -> None:
    ids = write(mcp_hub, "docs", "faq.md", "Refunds through the API take a week.")
    assert numbered(ids, "docs:faq.md")[0] >= DYNAMIC_BASE and len(ids) == 1
    assert documents.fetch(mcp_hub, "docs:faq.md#0")["text"].endswith("30 days of purchase.")


def test_a_document_past_a_thousand_passages_reads_its_first_thousand_and_counts_all(
    mcp_hub,
) -> None:
    lines = [f"Line {n:04} of the ledger says nothing new." for n in range(1003)]
    ids = write(mcp_hub, "small", "ledger.md", "\n\n".join(lines))
    texts = stored(mcp_hub, "small", "ledger.md")
    first = numbered(ids, "small:ledger.md")[0]
    assert len(texts) > 1000 and ids == [f"small:ledger.md#{first + n}" for n in range(len(texts))]
    whole = documents.fetch(mcp_hub, "small:ledger.md")
    assert whole["chunks"] == len(texts)
    assert whole["text"] == "\n\n".join(texts[:1000])
    assert documents.fetch(mcp_hub, ids[-1])["text"] == texts[-1]
