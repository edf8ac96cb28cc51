"""The MCP tools in process (rag_api.mcp.tools): each tool called on the server `build_tools`
makes, over a real hub of hash-embedded collections, with a caller's principal read from the
call's context. What each tool answers (and its JSON text beside the structured data), the
collection a search or an answer without one goes to, ids that fetch reads back from their own
collection, passage links, writes checked against the key and audited with the route, and refusals
in the hub's `CODE: message` words."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from prometheus_client import REGISTRY

from rag_api import version
from rag_api.access.grant import Principal
from rag_api.answering.models import Candidate, QueryAnswer, RoutingBlock, Source
from rag_api.errors import Unauthorized
from rag_api.hub import Hub
from rag_api.kbadmin.chunks import DYNAMIC_BASE
from rag_api.mcp.schemas import IDS, REMOVES, SCORES, UPSERTS
from rag_api.mcp.schemas import READS as READS_HINTS
from rag_api.mcp.server import HubServer
from rag_api.mcp.tools import _answering, answered, build_tools
from tests.mcp.conftest import GARAGE, HOURS

BASE = "https://hub.example/"
EVERY = frozenset({"*"})
READER = Principal("k-read", "reader", EVERY)
ADMIN = Principal("k-admin", "admin", EVERY, EVERY, admin=True)
NOTES_BOT = Principal("k-notes", "notes bot", frozenset({"docs"}), frozenset({"notes"}))
SPANISH = Principal("k-es", "spanish desk", frozenset({"soporte"}))
NOBODY = Principal("k-none", "reads nothing")
READS = ["search", "fetch", "list_collections", "answer"]
WRITES = ["upsert_document", "remove_document"]


@pytest.fixture
def tools(mcp_hub: Hub) -> Callable[..., HubServer]:
    """The tools as `principal` calls them (read from the call's context), links under BASE."""

    def built(principal: Principal | None, **options: Any) -> HubServer:
        def principal_of(ctx: Context) -> Principal | None:
            assert isinstance(ctx, Context)
            return principal

        options.setdefault("base_of", lambda ctx: BASE if isinstance(ctx, Context) else None)
        return build_tools(lambda: mcp_hub, principal_of, **options)

    return built


def call(server: HubServer, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured answer of a tool, checked to be the same as its JSON text."""
    result = asyncio.run(server.call_tool(tool, arguments))
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def refusal(server: HubServer, tool: str, **arguments: Any) -> str:
    with pytest.raises(ToolError) as refused:
        asyncio.run(server.call_tool(tool, arguments))
    return str(refused.value)


def linked(hub: Hub, url: str) -> tuple[str, str, int]:
    """The passage a link under BASE names (its signature checked)."""
    assert url.startswith(BASE + "passages/"), url
    cited = hub.links.read(url.rsplit("/", 1)[1])
    return cited.collection, cited.source, cited.chunk_index


def test_the_server_is_the_hubs_and_offers_write_tools_unless_told_not_to(tools) -> None:
    server = tools(READER)
    assert (server.name, server.version) == ("rag-hub", version())
    for tool in ("list_collections", "search", "fetch", "answer"):
        assert f"`{tool}`" in server.instructions
    offered = asyncio.run(server.list_tools())
    assert [tool.name for tool in offered] == READS + WRITES
    assert [t.name for t in asyncio.run(tools(READER, writes=False).list_tools())] == READS


DESCRIBED = {  # each tool's description: how it begins, phrases across its lines, how it ends
    "search": ("Search the knowledge bases for passages about `query`. Each result has an `id` to "
               "`fetch`", ["synced page), collection, scores, labels and text. "], SCORES),
    "fetch": ("Read what a `search` result's `id` names: the whole passage with its metadata, or "
              "with an id 'collection:source' the whole document. ",
              [f"{IDS} A missing document is DOCUMENT_NOT_FOUND"],
              ", a missing passage CHUNK_NOT_FOUND."),
    "list_collections": ("The collections this key may read: name, language, description, "
                         "embedding model", [], " and size in passages."),
    "answer": ("The hub's own answer to `question` with numbered citations [n] and its sources "
               "(written by the collection's LLM, or quoted from the passages without one); "
               "`collection` names the collection that answered. Sources' scores as search's: ",
               [], SCORES),
    "upsert_document": ("Write a document into a collection: its text split into passages, "
                        "searchable at once. Writing a `source` again replaces that document",
                        [" (and only it). Answers the ids of the passages written. Needs a key"],
                        " that may write the collection."),
    "remove_document": ("Remove a document (every passage of `source`) from a collection. Needs",
                        [], " a key that may write the collection."),
}  # fmt: skip
HINTS = {"search": READS_HINTS, "fetch": READS_HINTS, "list_collections": READS_HINTS,
         "answer": READS_HINTS, "upsert_document": UPSERTS, "remove_document": REMOVES}  # fmt: skip


def test_each_tool_is_described_whole_and_annotated_as_what_it_does(tools) -> None:
    offered = {t.name: t for t in asyncio.run(tools(READER).list_tools())}
    for name, (start, within, end) in DESCRIBED.items():
        description = offered[name].description
        assert description.startswith(start) and description.endswith(end), name
        for said in within:
            assert said in description, (name, said)
        assert offered[name].annotations == HINTS[name], name


def test_a_search_answers_passages_with_ids_scores_labels_and_their_page(mcp_hub, tools) -> None:
    found = call(tools(READER), "search", query="refunds within 30 days", collection="docs")
    first = found["results"][0]
    url = first.pop("url")
    assert first == {
        "id": "docs:faq.md#0",
        "title": "faq.md",
        "collection": "docs",
        "source": "faq.md",
        "chunk_index": 0,
        "score": first["score"],
        "dense_score": first["dense_score"],
        "type": "heading",
        "quality": 1.0,
        "text": "# Refunds\n\nRefunds are possible within 30 days of purchase.",
        "metadata": {},
    }
    assert first["score"] > 0 and -1 <= first["dense_score"] <= 1
    assert linked(mcp_hub, url) == ("docs", "faq.md", 0)


def test_a_search_returns_five_passages_unless_top_k_says_and_keeps_to_the_sources_named(
    tools,
) -> None:
    admin = tools(ADMIN)
    call(admin, "upsert_document", collection="small", source="levels.md", text=GARAGE)
    query = "garage level pass desk"
    assert len(call(admin, "search", query=query, collection="small")["results"]) == 5
    assert len(call(admin, "search", query=query, collection="small", top_k=2)["results"]) == 2
    assert len(call(admin, "search", query=query, collection="small", top_k=9)["results"]) > 5
    call(admin, "remove_document", collection="small", source="levels.md")
    reader = tools(READER)
    query = "garage level pass refunds purchase"
    only = call(reader, "search", query=query, collection="docs", sources=["parking.md"])
    assert {r["source"] for r in only["results"]} == {"parking.md"}
    headings = call(reader, "search", query=query, collection="docs",
                    filters={"types": ["heading"]})  # fmt: skip
    assert [r["id"] for r in headings["results"]] == ["docs:faq.md#0"]


def generated() -> float:
    """Answers docs generated in this process (the generate stage's count)."""
    labels = {"stage": "generate", "collection": "docs"}
    return REGISTRY.get_sample_value("rag_retrieval_stage_duration_seconds_count", labels) or 0.0


def test_a_search_writes_no_answer(tools) -> None:
    reader, question = tools(READER), "How many days for a refund?"
    before = generated()
    assert call(reader, "search", query=question, collection="docs")["results"]
    assert generated() == before
    assert call(reader, "answer", question=question, collection="docs")["answer"]
    assert generated() == before + 1


def test_a_cited_passage_of_a_long_document_is_fetched_and_linked_as_itself(mcp_hub, tools) -> None:
    reader = tools(READER)
    found = call(reader, "search", query="garage level deliveries", collection="docs",
                 sources=["parking.md"])  # fmt: skip
    first = found["results"][0]
    assert first["id"] == "docs:parking.md#1" and "deliveries" in first["text"]
    assert linked(mcp_hub, first["url"]) == ("docs", "parking.md", 1)
    fetched = call(reader, "fetch", id=first["id"])
    assert linked(mcp_hub, fetched.pop("url")) == ("docs", "parking.md", 1)
    assert fetched == {"id": "docs:parking.md#1", "title": "parking.md", "collection": "docs",
                       "source": "parking.md", "chunk_index": 1, "text": first["text"],
                       "metadata": {}}  # fmt: skip
    document = call(reader, "fetch", id="docs:parking.md")
    assert "url" not in document and document["chunks"] == 4
    assert document["text"].startswith("Level 1 of the garage") and "bicycles" in document["text"]


def test_without_a_base_no_passage_has_a_link(tools) -> None:
    reader = tools(READER, base_of=lambda ctx: None)
    found = call(reader, "search", query="refunds", collection="docs")
    assert found["results"] and not any("url" in r for r in found["results"])
    assert "url" not in call(reader, "fetch", id="docs:faq.md#0")
    answer = call(reader, "answer", question="How many days for a refund?", collection="docs")
    assert answer["sources"] and not any("url" in s for s in answer["sources"])


def test_a_synced_pages_passage_links_to_the_page_itself(tools) -> None:
    reader = tools(READER)
    first = call(reader, "search", query="help desk hours", collection="site")["results"][0]
    assert first["text"].endswith(HOURS) and first["source"].startswith("help:http://")
    assert first["url"] == first["source"].removeprefix("help:")
    assert call(reader, "fetch", id=first["id"])["url"] == first["url"]
    cited = call(reader, "answer", question="When does the help desk answer?", collection="site")
    assert [s["url"] for s in cited["sources"]] == [first["url"]]


def test_each_result_of_a_wide_auto_search_is_fetched_by_its_id_from_its_own_collection(
    mcp_hub, tools
) -> None:
    reader = tools(READER)  # reads both routable collections: `auto` routes
    results = call(reader, "search", query="refunds 30 days devoluciones días")["results"]
    assert {r["collection"] for r in results} == {"docs", "soporte"}  # wide: both answered
    for result in results:
        collection, source, index = result["collection"], result["source"], result["chunk_index"]
        assert result["id"] == f"{collection}:{source}#{index}"
        assert linked(mcp_hub, result["url"]) == (collection, source, index)
        got = call(reader, "fetch", id=result["id"])
        assert (got["collection"], got["source"], got["text"]) == (collection, source,
                                                                   result["text"])  # fmt: skip


def test_a_search_without_a_collection_goes_to_the_keys_default_or_its_only_one(tools) -> None:
    """`auto` only over several routable collections; notes is not routable."""
    for principal, collections in (
        (NOTES_BOT, {"docs"}),  # reads notes and docs: docs, the default
        (SPANISH, {"soporte"}),  # the default hidden: its one collection
    ):
        results = call(tools(principal), "search", query="30 días days refunds")["results"]
        assert {r["collection"] for r in results} == collections, principal.name
    desk = tools(Principal("k-desk", "desk", frozenset({"notes", "soporte"})))
    asked = call(desk, "answer", question="¿Cuántos días para las devoluciones?")
    assert (asked["collection"], asked["searched"], asked["sources"]) == ("notes", ["notes"], [])
    assert refusal(tools(NOBODY), "search", query="refunds") == (
        "COLLECTION_NOT_FOUND: collection 'docs' is not configured in collections.yaml"
    )


def test_an_answer_names_the_collection_that_answered_and_what_it_searched(mcp_hub, tools) -> None:
    reader = tools(READER)
    asked = call(reader, "answer", question="How many days for a refund?", collection="docs")
    cited = asked.pop("sources")
    assert asked == {
        "answer": "From the knowledge base:\n- Refunds are possible within 30 days of purchase. [1]",
        "collection": "docs",
        "searched": ["docs"],
        "generator": "extractive",
        "warning": None,
    }
    assert cited[0]["id"] == "docs:faq.md#0" and cited[0]["text"].endswith("purchase.")
    assert linked(mcp_hub, cited[0]["url"]) == ("docs", "faq.md", 0)
    routed = call(reader, "answer", question="¿Cuántos días para las devoluciones?")
    assert routed["collection"] == routed["sources"][0]["collection"] == "soporte"
    assert routed["sources"][0]["id"].startswith("soporte:faq.md#")
    assert "soporte" in routed["searched"] and "auto" not in routed["searched"]
    only = call(tools(NOTES_BOT), "answer", question="How many days for a refund?")
    assert (only["collection"], only["searched"]) == ("docs", ["docs"])


def routed(sources: list[str], searched: list[str], probes: dict[str, float | None]) -> QueryAnswer:
    """An `auto` answer whose passages come from `sources` (their collections)."""
    return QueryAnswer(
        collection="auto",
        mode="hybrid",
        answer=None,
        generator="none",
        model=None,
        usage=None,
        sources=[
            Source(
                source="a.md",
                chunk_index=0,
                score=1.0,
                text="t",
                metadata={},
                dense_score=None,
                dense_rank=None,
                sparse_score=None,
                sparse_rank=None,
                rerank_score=None,
                collection=name,
            )  # fmt: skip
            for name in sources
        ],
        timings_ms={},
        routing=RoutingBlock(
            decision="narrow",
            reason="probe",
            candidates=[
                Candidate(collection=name, probe_score=score, signals=[], passages=None)
                for name, score in probes.items()
            ],
            searched=searched,
        ),
    )


def test_auto_answers_from_its_best_passage_else_what_it_searched_first_else_its_best_probe() -> (
    None
):
    assert _answering(routed(["soporte", "docs"], ["docs", "soporte"], {"docs": 0.9})) == "soporte"
    assert _answering(routed(["soporte"], ["docs"], {})) == "soporte"
    assert _answering(routed([], ["soporte", "docs"], {"docs": 0.9})) == "soporte"
    probes = {"docs": 0.2, "soporte": 0.7, "notes": None}
    assert _answering(routed([], [], probes)) == "soporte"
    assert _answering(routed([], [], {"docs": -0.5, "soporte": -0.1})) == "soporte"
    assert _answering(routed([], [], {"docs": 0.0, "soporte": 0.4})) == "soporte"
    assert _answering(routed([], [], {"docs": 0.0, "notes": None})) == "docs"
    assert _answering(routed([], [], {"notes": None})) == "auto"
    assert _answering(routed([], [], {})) == "auto"


def test_list_collections_shows_what_the_key_may_read(tools) -> None:
    listed = call(tools(NOTES_BOT), "list_collections")["collections"]
    assert listed == [
        {"name": "notes", "language": "en", "description": "", "model": "hash:hash-test",
         "chunks": listed[0]["chunks"], "enabled": True},
        {"name": "docs", "language": "en", "description": "docs desk", "model": "hash:hash-test",
         "chunks": 5, "enabled": True},
    ]  # fmt: skip
    spanish = call(tools(SPANISH), "list_collections")["collections"]
    assert [(c["name"], c["language"], c["chunks"]) for c in spanish] == [("soporte", "es", 2)]


def test_a_written_document_answers_its_passage_ids_in_order_and_is_audited_with_the_route(
    mcp_hub, tools, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    bot = tools(NOTES_BOT)
    before = mcp_hub.describe("notes").points
    wrote = call(bot, "upsert_document", collection="notes", source="crm:2024/acme.md",
                 text=GARAGE.replace("garage", "depot"), metadata={"tier": "gold"})  # fmt: skip
    first = int(wrote["ids"][0].rpartition("#")[2])  # an API document's count from DYNAMIC_BASE
    ids = [f"notes:crm:2024/acme.md#{first + n}" for n in range(4)]
    assert first >= DYNAMIC_BASE
    assert wrote == {"collection": "notes", "source": "crm:2024/acme.md", "ids": ids, "added": 4,
                     "removed": 0, "total_after": before + 4}  # fmt: skip
    third = call(bot, "fetch", id=ids[2])
    assert third["metadata"] == {"tier": "gold"} and "deliveries" in third["text"]
    found = call(bot, "search", query="depot deliveries", collection="notes")["results"]
    assert found[0]["id"] in ids and found[0]["metadata"] == {"tier": "gold"}
    again = call(bot, "upsert_document", collection="notes", source="crm:2024/acme.md",
                 text="Acme renews every March.")  # fmt: skip
    assert (again["added"], again["removed"], len(again["ids"])) == (1, 4, 1)
    assert call(bot, "fetch", id=again["ids"][0])["metadata"] == {}
    assert refusal(bot, "fetch", id=ids[0]).startswith("CHUNK_NOT_FOUND: ")
    removed = call(bot, "remove_document", collection="notes", source="crm:2024/acme.md")
    assert removed == {"collection": "notes", "source": "crm:2024/acme.md", "removed": 1,
                       "total_after": before}  # fmt: skip
    audited = [r.getMessage() for r in caplog.records if r.name == "rag_api.audit"]
    assert len(audited) == 3, audited
    assert audited[0].startswith("k-notes (notes bot) POST /mcp: upsert/document on notes")
    assert audited[2].startswith("k-notes (notes bot) POST /mcp: remove on notes")


def test_the_audit_names_the_route_the_tools_were_built_for(tools, caplog) -> None:
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    local = tools(ADMIN, route="rag-hub mcp")
    call(local, "upsert_document", collection="notes", source="local.md", text="A local note.")
    call(local, "remove_document", collection="notes", source="local.md")
    audited = [r for r in caplog.records if r.name == "rag_api.audit"]
    assert [r.route for r in audited] == ["rag-hub mcp", "rag-hub mcp"]


def test_removing_a_document_removes_that_name_only(tools) -> None:
    admin = tools(ADMIN)
    call(admin, "upsert_document", collection="notes", source="plan", text="The plan.")
    call(admin, "upsert_document", collection="notes", source="plan-b", text="The other plan.")
    assert call(admin, "remove_document", collection="notes", source="plan")["removed"] == 1
    assert call(admin, "fetch", id="notes:plan-b")["text"] == "The other plan."
    assert call(admin, "remove_document", collection="notes", source="plan-b")["removed"] == 1


def test_a_key_writes_only_where_it_may_and_a_collection_it_cannot_read_is_not_found(
    tools, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="rag_api.audit")
    bot = tools(NOTES_BOT)
    for tool, arguments in (
        ("upsert_document", {"source": "n.md", "text": "a note"}),
        ("remove_document", {"source": "faq.md"}),
    ):
        assert refusal(bot, tool, collection="docs", **arguments) == (
            "FORBIDDEN: this key may read 'docs' but may not change it"
        )
        assert refusal(bot, tool, collection="soporte", **arguments) == (
            "COLLECTION_NOT_FOUND: collection 'soporte' is not configured in collections.yaml"
        )
    assert refusal(bot, "search", query="envíos", collection="soporte").startswith(
        "COLLECTION_NOT_FOUND: collection 'soporte'"
    )
    assert refusal(bot, "fetch", id="soporte:faq.md#0").startswith("COLLECTION_NOT_FOUND: ")
    assert call(bot, "fetch", id="docs:faq.md#0")["source"] == "faq.md"  # a read: allowed
    assert not [r for r in caplog.records if r.name == "rag_api.audit"]


def test_no_principal_or_a_refused_key_is_unauthorized(tools, mcp_hub) -> None:
    assert refusal(tools(None), "search", query="refunds") == (
        "UNAUTHORIZED: missing or invalid bearer key"
    )

    def revoked(ctx: Context) -> Principal:
        raise Unauthorized("the key was revoked")

    server = build_tools(lambda: mcp_hub, revoked)
    assert refusal(server, "list_collections") == "UNAUTHORIZED: the key was revoked"
    assert refusal(server, "remove_document", collection="notes", source="x") == (
        "UNAUTHORIZED: the key was revoked"
    )


def test_bad_arguments_are_refused_naming_the_tools_own_argument(tools) -> None:
    admin = tools(ADMIN)
    for tool, arguments, said in (
        ("search", {"query": "   "}, "INVALID_REQUEST: query: must not be empty"),
        ("search", {"query": "x", "filters": {"min_quality": 2}},
         "INVALID_REQUEST: filters.min_quality: must be ≤ 1.0"),
        ("remove_document", {"collection": "notes", "source": "a\nb"},
         "INVALID_REQUEST: source: must not contain control characters (newlines, tabs, NUL, "
         "U+0085, U+2028...)"),
        ("upsert_document", {"collection": "notes", "source": "n.md", "text": "a",
                             "metadata": {"k": {"n": 1}}},
         "INVALID_REQUEST: metadata: key 'k': a nested object is not allowed; metadata values "
         "are strings, numbers, booleans, null or flat lists of those"),
        ("answer", {"question": "x", "collection": "nope"},
         "COLLECTION_NOT_FOUND: collection 'nope' is not configured in collections.yaml"),
    ):  # fmt: skip
        assert refusal(admin, tool, **arguments) == said, arguments


def test_an_answer_goes_out_as_its_data_and_the_same_compact_json_text() -> None:
    data = {"text": "días", "n": 1, "path": Path("a/b")}
    result = answered(data)
    assert result.structured_content is data
    assert [c.type for c in result.content] == ["text"]
    assert result.content[0].text == '{"text":"días","n":1,"path":"a/b"}'
