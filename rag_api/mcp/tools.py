"""The MCP tools, over the hub's calls (`hub.kb`, `hub.query`): search and fetch (the pair
ChatGPT's connectors and deep research expect), list_collections, answer, and for a key that may
write, upsert_document and remove_document. Every call runs with the caller's grant, so a scoped
key sees only its collections: anything outside them is "not found", as on the other routes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from rag_api import version
from rag_api.access.grant import Grant, Principal, current
from rag_api.answering.models import Filters, QueryBody
from rag_api.errors import CollectionNotFound, RagError
from rag_api.hub import Hub
from rag_api.kbadmin.chunks import find_chunk
from rag_api.kbadmin.models import ListChunks, Remove, UpsertDocument
from rag_api.payload import StoredChunk

T = TypeVar("T")
MCP_ROUTE = "POST /mcp"  # what the audit line names: every tool call is a POST to /mcp
Query = Annotated[str, Field(min_length=1, max_length=8000, description="The question or keywords")]
CollectionArg = Annotated[
    str | None,
    Field(description="A collection name, or 'auto' to search where the question belongs "
          "(default: auto when several collections are readable)"),
]  # fmt: skip
TopK = Annotated[int, Field(ge=1, le=100, description="How many passages (default 5)")]
INSTRUCTIONS = (
    "Search the organisation's knowledge bases: `list_collections` says what exists, `search` "
    "returns passages with ids, `fetch` reads a passage (or its whole document) by id, `answer` "
    "gives the hub's own cited answer."
)


def build_tools(
    hub_of: Callable[[], Hub], principal_of: Callable[[Context], Principal | None]
) -> MCPServer:
    """The MCP server of the hub `hub_of()` returns; `principal_of(ctx)` says who calls."""
    server = MCPServer("rag-hub", version=version(), instructions=INSTRUCTIONS)

    async def run(ctx: Context, work: Callable[[Hub], T], writes: str | None = None) -> T:
        """`work` in a worker thread with the caller's grant (to write into the collection
        `writes`, if given); a domain error as a tool error."""
        principal = principal_of(ctx)
        if principal is None:
            raise ToolError("UNAUTHORIZED: missing or invalid bearer key")
        if writes is not None and not principal.may("write", writes):
            if not principal.may("read", writes):  # as if it did not exist
                raise ToolError(f"COLLECTION_NOT_FOUND: {CollectionNotFound(writes).message}")
            raise ToolError(f"FORBIDDEN: this key may read '{writes}' but may not change it")

        def granted() -> T:
            current.set(Grant(principal, "read" if writes is None else "write", MCP_ROUTE))
            return work(hub_of())

        try:
            return await anyio.to_thread.run_sync(granted)
        except RagError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
            raise ToolError(f"INVALID_REQUEST: {where}: {first.get('msg')}") from exc

    @server.tool(
        description="Search the knowledge bases for passages about `query`. Each result has an "
        "`id` to `fetch`, its source document, collection, scores, labels and text."
    )
    async def search(
        query: Query,
        ctx: Context,
        collection: CollectionArg = None,
        top_k: TopK = 5,
        filters: Annotated[
            dict[str, Any] | None,
            Field(description="metadata (key: value), source_prefix, types, min_quality"),
        ] = None,
        sources: Annotated[
            list[str] | None, Field(description="Only these documents (source names)")
        ] = None,
    ) -> CallToolResult:
        def work(hub: Hub) -> dict[str, Any]:
            body = QueryBody(query=query, top_k=top_k, generate=False, sources=sources,
                             filters=Filters.model_validate(filters) if filters else None)  # fmt: skip
            found = hub.query.ask(collection or _default(hub), body)
            return {"results": [_passage(p.model_dump(), found.collection) for p in found.sources]}

        return answered(await run(ctx, work))

    @server.tool(
        description="Read what a `search` result's `id` names: the whole chunk with its metadata; "
        "an id of the form 'collection:source' reads the whole document."
    )
    async def fetch(
        id: Annotated[str, Field(min_length=3, max_length=2000, description="An id from search")],
        ctx: Context,
    ) -> CallToolResult:
        return answered(await run(ctx, lambda hub: _fetch(hub, id)))

    @server.tool(description="The collections this key may read: name, language, description, "
                 "embedding model and size in chunks.")  # fmt: skip
    async def list_collections(ctx: Context) -> CallToolResult:
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

    @server.tool(
        description="The hub's own answer to `question` with numbered citations [n] and its "
        "sources (written by the collection's LLM, or quoted from the passages without one)."
    )
    async def answer(
        question: Query, ctx: Context, collection: CollectionArg = None
    ) -> CallToolResult:
        def work(hub: Hub) -> dict[str, Any]:
            got = hub.query.ask(collection or _default(hub), QueryBody(query=question))
            sources = [_passage(s.model_dump(), got.collection) for s in got.sources]
            return {"answer": got.answer, "collection": got.collection, "sources": sources,
                    "generator": got.generator, "warning": got.warning}  # fmt: skip

        return answered(await run(ctx, work))

    @server.tool(
        description="Write a document into a collection (replacing any document of that "
        "source): an agent's notes. Needs a key that may write the collection."
    )
    async def upsert_document(
        collection: Annotated[str, Field(min_length=1, max_length=63)],
        source: Annotated[str, Field(min_length=1, max_length=512)],
        text: Annotated[str, Field(min_length=1)],
        ctx: Context,
        metadata: dict[str, Any] | None = None,
    ) -> CallToolResult:
        body = {
            "collection": collection,
            "source": source,
            "text": text,
            "metadata": metadata or {},
        }
        return answered(await run(ctx, lambda hub: hub.kb.upsert_document(
            UpsertDocument.model_validate(body)).model_dump(exclude_unset=True), collection))  # fmt: skip

    @server.tool(description="Remove a document (every chunk of `source`) from a collection. "
                 "Needs a key that may write the collection.")  # fmt: skip
    async def remove_document(
        collection: Annotated[str, Field(min_length=1, max_length=63)],
        source: Annotated[str, Field(min_length=1, max_length=512)],
        ctx: Context,
    ) -> CallToolResult:
        body = Remove(collection=collection, source_prefix=source, exact=True)
        return answered(await run(ctx, lambda hub: hub.kb.remove(body).model_dump(), collection))

    return server


def answered(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer as it goes out: the structured data, and the same as compact JSON text
    for clients that read text only (built once, not checked again against a schema)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _default(hub: Hub) -> str:
    """`auto` when the key reads several routable collections, else the default (or only) one."""
    visible = hub.visible()
    routable = [n for n in visible if hub.collections[n].cfg.routing.enabled]
    if len(routable) > 1:
        return hub.config.router.name
    default = hub.default_visible()
    return default or (visible[0] if visible else hub.config.default_collection)


def _passage(row: dict[str, Any], collection: str) -> dict[str, Any]:
    name = row.get("collection") or collection
    return {
        "id": f"{name}:{row['source']}#{row['chunk_index']}",
        "title": row["source"],
        "collection": name,
        "source": row["source"],
        "chunk_index": row["chunk_index"],
        "score": row["score"],
        "type": row.get("type"),
        "quality": row.get("quality"),
        "text": row["text"],
        "metadata": row.get("metadata") or {},
        **({"url": row["url"]} if row.get("url") else {}),
    }


def _fetch(hub: Hub, id: str) -> dict[str, Any]:
    """A chunk (`collection:source#n`) or a whole document (`collection:source`)."""
    name, _, rest = id.partition(":")
    if not rest:
        raise CollectionNotFound(name)
    kb = hub.kb.collection(name)  # hidden from this key: not found
    source, hashed, index = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if hashed and index.isdigit():
        stored = StoredChunk(find_chunk(kb, None, source, int(index)).payload)
        return {"id": id, "title": source, "collection": name, "source": source,
                "chunk_index": stored.chunk_index, "text": stored.text,
                "metadata": stored.metadata,
                **({"url": stored.url} if stored.url else {})}  # fmt: skip
    page = hub.kb.chunks(ListChunks(collection=name, source_exact=rest, limit=1000,
                                    include_text=True))  # fmt: skip
    if not page.items:
        raise CollectionNotFound(f"{name}:{rest}")
    text = "\n\n".join(item.text or "" for item in page.items)
    url = page.items[0].url
    return {"id": id, "title": rest, "collection": name, "source": rest, "text": text,
            "chunks": page.total, "metadata": page.items[0].metadata,
            **({"url": url} if url else {})}  # fmt: skip
