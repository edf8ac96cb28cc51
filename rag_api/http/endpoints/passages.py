"""A citation's passage page: `GET /passages/{token}`, the passage a signed link names, its
document's title and source, its neighbours, the original's address and a link into the console
— HTML that reads without JavaScript and without a key: the link is the authorisation
(rag_api.access.links). An altered, expired or unknown link gets a refusal page, no passage."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from rag_api.access.links import PAGE, Cited, LinkRefused
from rag_api.console import chunk_page
from rag_api.console.views import page
from rag_api.http.deps import HubDep
from rag_api.hub import Hub
from rag_api.payload import StoredChunk, chunk_ref
from rag_api.store import Selector

router = APIRouter(include_in_schema=False)  # a page, not API


class PassageGone(LinkRefused):
    code = "PASSAGE_NOT_FOUND"
    status = 404


@router.get(PAGE + "/{token}", response_class=HTMLResponse)
def passage(token: str, request: Request, hub: HubDep) -> HTMLResponse:
    """The passage the link names, or why it does not open."""
    try:
        if not hub.links.enabled:
            raise LinkRefused("passage links are off on this hub (RAG_LINK_TTL=off)")
        cited = hub.links.read(token)
        chunks = _document(hub, cited)
    except LinkRefused as exc:
        return page(
            request, "passage.html", "Passage", exc.status, refused=exc.message, code=exc.code
        )
    position = [c.chunk_index for c in chunks].index(cited.chunk_index)
    this = chunks[position]
    return page(
        request,
        "passage.html",
        this.title or cited.source,
        id=chunk_ref(cited.collection, cited.source, cited.chunk_index),
        document_title=this.title or cited.source,
        source=cited.source,
        collection=cited.collection,
        chunk_index=cited.chunk_index,
        chunks=len(chunks),
        text=this.text,
        before=chunks[position - 1].text if position > 0 else None,
        after=chunks[position + 1].text if position + 1 < len(chunks) else None,
        original=this.url,
        console=chunk_page(cited.collection, cited.source, cited.chunk_index),
        expires=datetime.fromtimestamp(cited.expires, UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def _document(hub: Hub, cited: Cited) -> list[StoredChunk]:
    """The cited document's chunks in order; PassageGone when the cited one is not among them
    (or its collection is gone or disabled)."""
    collection = hub.collections.get(cited.collection)
    readable = collection is not None and collection.cfg.enabled
    records = collection.records(Selector(sources=(cited.source,))) if readable else []
    chunks = sorted((StoredChunk(r.payload) for r in records), key=lambda c: c.chunk_index or 0)
    if not any(c.chunk_index == cited.chunk_index for c in chunks):
        raise PassageGone(
            "the passage this link names is no longer in the collection (its document changed or "
            "was removed since): ask the question again"
        )
    return chunks
