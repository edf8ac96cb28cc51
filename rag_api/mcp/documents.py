"""Documents and passages by id, for `fetch` and `upsert_document`: an id is
`collection:source#chunk_index` (a passage) or `collection:source` (a document). Only the first
':' ends the collection: a source may hold ':' itself (a synced page is `name:https://...`) and
'#' too (an API document without a name is `dynamic#<n>`), so an id that reads as a passage but
names none is tried as a document before it is called missing."""

from __future__ import annotations

import re
from typing import Any

from rag_api.errors import ChunkNotFound, DocumentNotFound, InvalidRequest
from rag_api.hub import Hub
from rag_api.kbadmin.chunks import find_chunk
from rag_api.kbadmin.models import ChunkItem, ChunkPage, ListChunks
from rag_api.payload import FROM_API, StoredChunk, chunk_ref
from rag_api.points.collection import Collection
from rag_api.store import Selector

PASSAGE = re.compile(r"(?P<source>.+)#(?P<index>\d+)")
PAGE = 1000  # chunks a listing returns at most


def fetch(hub: Hub, id: str) -> dict[str, Any]:
    """The passage or the document `id` names (its collection hidden from the key: not found)."""
    name, colon, rest = id.partition(":")
    if not colon or not name or not rest:
        raise InvalidRequest(
            f"id: '{id[:80]}' is not an id from search: ids are 'collection:source#chunk_index' "
            "(a passage) or 'collection:source' (a document)",
            param="id",
        )
    kb = hub.kb.collection(name)
    passage = PASSAGE.fullmatch(rest)
    if passage is not None:
        source, index = passage["source"], int(passage["index"])
        try:
            stored = StoredChunk(find_chunk(kb, None, source, index).payload)
        except ChunkNotFound:
            if _count(kb, rest):  # a document whose name ends in '#<n>'
                return _document(hub, kb, rest, id)
            if not _count(kb, source):
                raise DocumentNotFound(_no_document(kb.name, source)) from None
            raise ChunkNotFound(
                f"the document '{source}' of collection '{kb.name}' has no passage {index} "
                f"(fetch '{kb.name}:{source}' reads the whole document)"
            ) from None
        return {"id": id, "title": source, "collection": kb.name, "source": source,
                "chunk_index": stored.chunk_index, "text": stored.text,
                "metadata": stored.metadata, **_url(stored.url)}  # fmt: skip
    return _document(hub, kb, rest, id)


def written_ids(hub: Hub, collection: str, source: str) -> list[str]:
    """The ids of the passages the API wrote for `source`, in order (its kb file's, if a file
    has that name too, are the folder's and not listed)."""
    items = [item for item in _chunks(hub, collection, source, text=False)
             if item.origin == FROM_API]  # fmt: skip
    items.sort(key=lambda item: item.chunk_index)
    return [chunk_ref(collection, source, item.chunk_index) for item in items]


def _document(hub: Hub, kb: Collection, source: str, id: str) -> dict[str, Any]:
    """The document's first PAGE passages joined (an answer of a bounded size), and its count."""
    page = _page(hub, kb.name, source, 0, text=True)
    if not page.items:
        raise DocumentNotFound(_no_document(kb.name, source))
    items = sorted(page.items, key=lambda item: item.chunk_index)
    return {"id": id, "title": source, "collection": kb.name, "source": source,
            "chunks": page.total, "text": "\n\n".join(item.text or "" for item in items),
            "metadata": items[0].metadata, **_url(items[0].url)}  # fmt: skip


def _chunks(hub: Hub, collection: str, source: str, text: bool) -> list[ChunkItem]:
    """Every chunk of the document `source`, page by page."""
    found: list[ChunkItem] = []
    while True:
        page = _page(hub, collection, source, len(found), text)
        found.extend(page.items)
        if not page.items or len(found) >= page.total:
            return found


def _page(hub: Hub, collection: str, source: str, offset: int, text: bool) -> ChunkPage:
    return hub.kb.chunks(ListChunks(collection=collection, source_exact=source, limit=PAGE,
                                    offset=offset, include_text=text))  # fmt: skip


def _count(kb: Collection, source: str) -> int:
    return kb.count(Selector(sources=(source,)))


def _no_document(collection: str, source: str) -> str:
    return f"collection '{collection}' has no document '{source}' (search lists what it holds)"


def _url(url: str | None) -> dict[str, str]:
    return {"url": url} if url else {}
