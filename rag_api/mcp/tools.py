"""The MCP tools, over the hub's calls (`hub.kb`, `hub.query`): search and fetch (the pair
ChatGPT's connectors and deep research expect), list_collections, answer, and on a server built
`writes=True` (for a key that may write somewhere) upsert_document and remove_document. Every
call runs with the caller's grant, so a scoped key sees only its collections: anything outside
them is "not found", as on the other routes. Arguments and answers: rag_api.mcp.schemas."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from rag_api import version
from rag_api.access.grant import Grant, Principal, current
from rag_api.access.links import LinkRefused
from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.errors import CollectionNotFound, RagError
from rag_api.hub import Hub
from rag_api.kbadmin.models import Remove, UpsertDocument
from rag_api.mcp import documents
from rag_api.mcp.schemas import (
    IDS,
    READS,
    REMOVES,
    SCORES,
    UPSERTS,
    Answered,
    CollectionArg,
    Collections,
    DocumentSource,
    DocumentText,
    Fetched,
    FiltersArg,
    Found,
    Id,
    Metadata,
    Query,
    Removed,
    RemovedSource,
    Sources,
    TopK,
    WriteCollection,
    Written,
)
from rag_api.mcp.server import HubServer
from rag_api.mcp.words import invalid
from rag_api.payload import chunk_ref

T = TypeVar("T")
MCP_ROUTE = "POST /mcp"  # what the audit line names: every tool call is a POST to /mcp
INSTRUCTIONS = (
    "Search the organisation's knowledge bases: `list_collections` says what exists, `search` "
    "returns passages with ids, `fetch` reads a passage (or its whole document) by id, `answer` "
    "gives the hub's own cited answer."
)


def build_tools(
    hub_of: Callable[[], Hub],
    principal_of: Callable[[Context], Principal | None],
    writes: bool = True,
    route: str = MCP_ROUTE,
    base_of: Callable[[Context], str | None] = lambda ctx: None,
) -> HubServer:
    """The MCP server of the hub `hub_of()` returns; `principal_of(ctx)` says who calls, `writes`
    whether the write tools are offered (to a key that may write somewhere), `route` what the
    audit lines name, `base_of(ctx)` where people reach the hub (the base of passage links; None:
    no link)."""
    server = HubServer("rag-hub", version=version(), instructions=INSTRUCTIONS)

    async def run(ctx: Context, work: Callable[[Hub], T], into: str | None = None) -> T:
        """`work` in a worker thread with the caller's grant (to write into the collection
        `into`, if given); a domain error, or a hub model's refusal, as a tool error."""
        try:
            principal = principal_of(ctx)
        except RagError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc
        if principal is None:
            raise ToolError("UNAUTHORIZED: missing or invalid bearer key")
        if into is not None and not principal.may("write", into):
            if not principal.may("read", into):  # as if it did not exist
                raise ToolError(f"COLLECTION_NOT_FOUND: {CollectionNotFound(into).message}")
            raise ToolError(f"FORBIDDEN: this key may read '{into}' but may not change it")

        def granted() -> T:
            current.set(Grant(principal, "read" if into is None else "write", route))
            return work(hub_of())

        try:
            return await anyio.to_thread.run_sync(granted)
        except RagError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc

    async def search(
        query: Query,
        ctx: Context,
        collection: CollectionArg = None,
        top_k: TopK = 5,
        filters: FiltersArg = None,
        sources: Sources = None,
    ) -> Annotated[CallToolResult, Found]:
        def work(hub: Hub) -> dict[str, Any]:
            body = _model(QueryBody, {"query": query, "top_k": top_k, "generate": False,
                                      "sources": sources, "filters": filters})  # fmt: skip
            found = hub.query.ask(collection or _default(hub), body)
            link = _linker(hub, base_of(ctx))
            rows = [_passage(p.model_dump(), found.collection, link) for p in found.sources]
            return {"results": rows}

        return answered(await run(ctx, work))

    async def fetch(id: Id, ctx: Context) -> Annotated[CallToolResult, Fetched]:
        def work(hub: Hub) -> dict[str, Any]:
            got = documents.fetch(hub, id)
            index = got.get("chunk_index")  # a passage: its page, if its source has no address
            if "url" not in got and index is not None:
                got |= _url(_linker(hub, base_of(ctx))(got["collection"], got["source"], index))
            return got

        return answered(await run(ctx, work))

    async def list_collections(ctx: Context) -> Annotated[CallToolResult, Collections]:
        def work(hub: Hub) -> dict[str, Any]:
            rows = [hub.describe(name) for name in hub.visible()]
            return {
                "collections": [
                    {"name": r.name, "language": r.language, "description": r.description,
                     "model": r.embedder, "chunks": r.points, "enabled": r.enabled}
                    for r in rows
                ]
            }  # fmt: skip

        return answered(await run(ctx, work))

    async def answer(
        question: Query, ctx: Context, collection: CollectionArg = None
    ) -> Annotated[CallToolResult, Answered]:
        def work(hub: Hub) -> dict[str, Any]:
            got = hub.query.ask(collection or _default(hub), _model(QueryBody, {"query": question}))
            link = _linker(hub, base_of(ctx))
            sources = [_passage(s.model_dump(), got.collection, link) for s in got.sources]
            return {"answer": got.answer, "collection": _answering(got), "searched":
                    _searched(got), "sources": sources, "generator": got.generator,
                    "warning": got.warning}  # fmt: skip

        return answered(await run(ctx, work))

    async def upsert_document(
        collection: WriteCollection,
        source: DocumentSource,
        text: DocumentText,
        ctx: Context,
        metadata: Metadata = None,
    ) -> Annotated[CallToolResult, Written]:
        def work(hub: Hub) -> dict[str, Any]:
            body = _model(UpsertDocument, {"collection": collection, "source": source,
                                           "text": text, "metadata": metadata or {}})  # fmt: skip
            done = hub.kb.upsert_document(body)
            return {"collection": collection, "source": source,
                    "ids": documents.written_ids(hub, collection, source), "added": done.added,
                    "removed": done.removed, "total_after": done.total_after}  # fmt: skip

        return answered(await run(ctx, work, collection))

    async def remove_document(
        collection: WriteCollection, source: RemovedSource, ctx: Context
    ) -> Annotated[CallToolResult, Removed]:
        def work(hub: Hub) -> dict[str, Any]:
            body = _model(Remove, {"collection": collection, "source_prefix": source, "exact": True},
                          {"source_prefix": "source"})  # fmt: skip
            done = hub.kb.remove(body)
            return {"collection": collection, "source": source, "removed": done.removed,
                    "total_after": done.total_after}  # fmt: skip

        return answered(await run(ctx, work, collection))

    server.add(search, READS, "Search the knowledge bases for passages about `query`. Each "
               "result has an `id` to `fetch`, its document (`source`, `url` for a synced page), "
               f"collection, scores, labels and text. {SCORES}")  # fmt: skip
    server.add(fetch, READS, "Read what a `search` result's `id` names: the whole passage with "
               f"its metadata, or with an id 'collection:source' the whole document. {IDS} A "
               "missing document is DOCUMENT_NOT_FOUND, a missing passage CHUNK_NOT_FOUND.")  # fmt: skip
    server.add(list_collections, READS, "The collections this key may read: name, language, "
               "description, embedding model and size in passages.")  # fmt: skip
    server.add(answer, READS, "The hub's own answer to `question` with numbered citations [n] "
               "and its sources (written by the collection's LLM, or quoted from the passages "
               "without one); `collection` names the collection that answered. Sources' scores "
               f"as search's: {SCORES}")  # fmt: skip
    if writes:
        server.add(upsert_document, UPSERTS, "Write a document into a collection: its text "
                   "split into passages, searchable at once. Writing a `source` again replaces "
                   "that document (and only it). Answers the ids of the passages written. Needs "
                   "a key that may write the collection.")  # fmt: skip
        server.add(remove_document, REMOVES, "Remove a document (every passage of `source`) "
                   "from a collection. Needs a key that may write the collection.")  # fmt: skip
    return server


def answered(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer as it goes out: the structured data (the SDK checks it against the tool's
    outputSchema), and the same as compact JSON text for clients that read text only."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _model(model: type[T], given: dict[str, Any], names: dict[str, str] | None = None) -> T:
    """`given` as the hub's `model`, or INVALID_REQUEST naming the tool's argument."""
    try:
        return model.model_validate(given)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as exc:
        raise ToolError(invalid(exc, given, names)) from exc


def _default(hub: Hub) -> str:
    """`auto` when the key reads several routable collections, else the default (or only) one."""
    visible = hub.visible()
    routable = [n for n in visible if hub.collections[n].cfg.routing.enabled]
    if len(routable) > 1:
        return hub.config.router.name
    default = hub.default_visible()
    return default or (visible[0] if visible else hub.config.default_collection)


def _answering(got: QueryAnswer) -> str:
    """The collection whose answer this is: `auto` answers from its best passage's collection,
    else from the collection it searched first, else from its strongest probe."""
    if got.routing is None:
        return got.collection
    if got.sources and got.sources[0].collection:
        return got.sources[0].collection
    if got.routing.searched:
        return got.routing.searched[0]
    probed = [c for c in got.routing.candidates if c.probe_score is not None]
    best = max(probed, key=lambda c: c.probe_score or 0.0, default=None)
    return best.collection if best else got.collection


def _searched(got: QueryAnswer) -> list[str]:
    return list(got.routing.searched) if got.routing is not None else [got.collection]


Link = Callable[[str, str, int], str | None]  # (collection, source, chunk_index) -> its page


def _linker(hub: Hub, base: str | None) -> Link:
    """A passage's page under `base`, signed by the hub (none without a base, or links off)."""
    if base is None or not hub.links.enabled:
        return lambda collection, source, index: None

    def link(collection: str, source: str, index: int) -> str | None:
        try:
            return hub.links.url(base, collection, source, index)
        except LinkRefused:  # no secret to sign with yet (a reader before its writer)
            return None

    return link


def _url(url: str | None) -> dict[str, str]:
    return {"url": url} if url else {}


def _passage(row: dict[str, Any], collection: str, link: Link) -> dict[str, Any]:
    name = row.get("collection") or collection
    url = row.get("url") or link(name, row["source"], row["chunk_index"])
    return {
        "id": chunk_ref(name, row["source"], row["chunk_index"]),
        "title": row["source"],
        "collection": name,
        "source": row["source"],
        "chunk_index": row["chunk_index"],
        "score": row["score"],
        "dense_score": row.get("dense_score"),
        "type": row.get("type"),
        "quality": row.get("quality"),
        "text": row["text"],
        "metadata": row.get("metadata") or {},
        **_url(url),
    }
