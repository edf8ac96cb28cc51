"""An OpenAI turn's Reply (rag_api.openai_compat.reply) on an in-process hub of hash collections:
the answer starts at its first use, its pieces and tool call deltas make the text and whole calls,
the sources footer (plain, linked, or none for JSON, tool calls and collections without
citations), the finish reason and the hub's own fields; which requests a collection's generator
refuses; a retrieval-free model and a client's task prompt answered without a search."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_api.access.links import LinkRefused, PassageLinks
from rag_api.answering.answer import AnswerStream
from rag_api.errors import InvalidRequest
from rag_api.hub import Hub
from rag_api.llm.generators import Options, Piece, ToolCallDelta
from rag_api.openai_compat.conversation import Conversation
from rag_api.openai_compat.reply import Reply, check_support, start_reply
from rag_api.payload import StoredChunk
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config
from tests.support.fakes import FakeOllama

LLM = {"provider": "ollama", "model": "llama3"}
PASSAGES = [
    Passage("1", "a.md", 0, 1.0, "Refunds take 30 days.", {}),
    Passage("2", "b.md", 3, 0.9, "Plans cost 49 euros.", {}),
]
TITLE_PROMPT = (
    "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
    '### Output:\nJSON format: { "title": "your concise title here" }\n'
    "### Chat History:\n<chat_history>\nUSER: How do refunds work?\n</chat_history>"
)


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    collections = {
        "docs": hash_collection(),
        "quiet": hash_collection(citations=False),
        "notes": hash_collection(llm=LLM, language="es"),
    }
    config = write_config(tmp_path / "c.yaml", collections)
    return open_hub(make_settings(config, "memory"))


class Started:
    """A Reply's `start`: the stream it gives, and how often it was asked."""

    def __init__(self, pieces: list[Piece], passages=PASSAGES, **fields) -> None:
        self.calls = 0
        self.closed = False
        self.stream = AnswerStream(
            list(passages), "ollama", "llama3", _pieces=self._pieces(pieces), **fields
        )

    def _pieces(self, pieces: list[Piece]):
        try:
            yield from pieces
        except GeneratorExit:
            self.closed = True
            raise

    def __call__(self) -> AnswerStream:
        self.calls += 1
        return self.stream


def reply(hub: Hub, started: Started, collection: str = "docs", **fields) -> Reply:
    return Reply("rag/" + collection, hub.collection(collection), started, **fields)


def test_the_answer_starts_at_the_first_use_and_only_once(hub: Hub) -> None:
    started = Started(["Refunds take 30 days [1]."])
    answer = reply(hub, started)
    assert started.calls == 0
    assert answer.content == ""
    text = answer.text()
    assert text == "Refunds take 30 days [1].\n\nSources: [1] a.md"
    assert answer.content == text
    assert started.calls == 1


def test_the_pieces_are_the_answers_then_the_footer(hub: Hub) -> None:
    answer = reply(hub, Started(["Plans [2] ", "and refunds [1]."]))
    assert list(answer.pieces()) == [
        "Plans [2] ",
        "and refunds [1].",
        "\n\nSources: [1] a.md; [2] b.md",
    ]


def test_tool_call_deltas_make_whole_calls_in_index_order_and_no_footer(hub: Hub) -> None:
    pieces = [
        ToolCallDelta(1, id="call_b", name="pa", arguments='{"n":'),
        ToolCallDelta(0, id="call_a", name="ticket", arguments="{}"),
        ToolCallDelta(1, name="ge", arguments=" 2}"),
        ToolCallDelta(1, id=None, arguments=""),
    ]
    answer = reply(hub, Started(["Let me check. ", *pieces]))
    assert list(answer.pieces()) == ["Let me check. ", *pieces]
    assert answer.tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "ticket", "arguments": "{}"}},
        {"id": "call_b", "type": "function", "function": {"name": "page", "arguments": '{"n": 2}'}},
    ]
    assert answer.content == "Let me check. "
    assert answer.finish_reason == "tool_calls"


def test_a_call_without_an_id_keeps_none(hub: Hub) -> None:
    answer = reply(hub, Started([ToolCallDelta(0, name="f")]))
    answer.text()
    assert answer.tool_calls == [
        {"id": None, "type": "function", "function": {"name": "f", "arguments": ""}}
    ]


@pytest.mark.parametrize(
    ("collection", "fields", "passages"),
    [
        ("docs", {}, []),
        ("quiet", {}, PASSAGES),
        ("docs", {"structured": True}, PASSAGES),
    ],
)
def test_no_footer_without_passages_citations_or_for_json(
    hub: Hub, collection: str, fields: dict, passages
) -> None:
    answer = reply(hub, Started(["{}"], passages), collection, **fields)
    assert answer.text() == "{}"
    assert answer.footer() == ""


def test_the_footer_is_in_the_answers_language_else_the_collections(hub: Hub) -> None:
    assert reply(hub, Started(["x"]), "notes").text() == "x\n\nFuentes: [1] a.md; [2] b.md"
    answer = reply(hub, Started(["x"]), "notes", language="en")
    assert answer.text() == "x\n\nSources: [1] a.md; [2] b.md"


def links(ttl_s: float | None = 60, secret: bytes | None = b"s" * 32) -> PassageLinks:
    def read() -> bytes:
        if secret is None:
            raise LinkRefused("no secret yet")
        return secret

    return PassageLinks(read, ttl_s, clock=lambda: 1_000_000.0)


def test_with_a_base_url_and_links_each_cited_passage_links_to_its_page(hub: Hub) -> None:
    signed = links()
    answer = reply(hub, Started(["x [2]"]), base_url="https://hub/", links=signed)
    url = signed.url("https://hub/", "docs", "b.md", 3)
    assert answer.text() == f"x [2]\n\nSources: [2] [b.md]({url})"
    cited = Passage("9", "c.md", 5, 1.0, "t", {}, collection="notes")
    assert answer.link(cited) == signed.url("https://hub/", "notes", "c.md", 5)


@pytest.mark.parametrize(
    ("base_url", "signed"),
    [(None, links()), ("https://hub", None), ("https://hub", links(ttl_s=None))],
)
def test_without_a_base_url_or_enabled_links_the_footer_is_plain(
    hub: Hub, base_url, signed
) -> None:
    answer = reply(hub, Started(["x [2]"]), base_url=base_url, links=signed)
    assert answer.text() == "x [2]\n\nSources: [2] b.md"


def test_links_without_a_secret_yet_fall_back_to_the_plain_footer(hub: Hub) -> None:
    answer = reply(hub, Started(["x [1]"]), base_url="https://hub", links=links(secret=None))
    assert answer.text() == "x [1]\n\nSources: [1] a.md"
    unsigned = links(secret=None)
    spanish = reply(hub, Started(["x [1]"]), "notes", base_url="https://hub", links=unsigned)
    assert spanish.text() == "x [1]\n\nFuentes: [1] a.md"


@pytest.mark.parametrize(("upstream", "reason"), [("length", "length"), ("error", "stop")])
def test_the_finish_reason_is_length_or_stop(hub: Hub, upstream: str, reason: str) -> None:
    answer = reply(hub, Started(["x"], finish_reason=upstream))
    answer.text()
    assert answer.finish_reason == reason


def test_the_hubs_own_fields_carry_sources_generator_and_what_was_set(hub: Hub) -> None:
    plain = reply(hub, Started(["x"]))
    assert plain.extra() == {
        "sources": [p.as_dict() for p in PASSAGES],
        "generator": "ollama",
    }
    full = reply(
        hub,
        Started(["x"]),
        retrieval_warning="search degraded",
        routing={"chosen": "docs"},
        retrieval={"query": "q", "follow_up": "none", "why": ""},
    )
    assert full.extra() == {
        "sources": [p.as_dict() for p in PASSAGES],
        "generator": "ollama",
        "warning": "search degraded",
        "routing": {"chosen": "docs"},
        "retrieval": {"query": "q", "follow_up": "none", "why": ""},
    }
    upstream = reply(hub, Started(["x"], warning="cut short"), retrieval_warning="degraded")
    assert upstream.extra()["warning"] == "cut short"


def test_close_stops_a_started_answer_and_starts_none(hub: Hub) -> None:
    never = Started(["x"])
    reply(hub, never).close()
    assert never.calls == 0
    started = Started(["a", "b"])
    answer = reply(hub, started)
    next(answer.pieces())
    answer.close()
    assert started.closed


def test_the_extractive_generator_refuses_json_and_forced_tools(hub: Hub) -> None:
    docs = hub.collection("docs")
    check_support(hub, docs, Options(tools=({"type": "function"},), tool_choice="auto"))
    with pytest.raises(InvalidRequest) as refused:
        check_support(hub, docs, Options(response_format={"type": "json_object"}), "text.format")
    assert refused.value.param == "text.format"
    assert refused.value.message == (
        "text.format: the extractive generator (no LLM configured) cannot produce structured output"
    )
    with pytest.raises(InvalidRequest) as refused:
        check_support(hub, docs, Options(response_format={"type": "json_object"}))
    assert refused.value.param == "response_format"
    with pytest.raises(InvalidRequest) as refused:
        check_support(hub, docs, Options(tools=({"type": "function"},), tool_choice="required"))
    assert refused.value.param == "tool_choice"
    assert refused.value.message == (
        "tool_choice: the extractive generator (no LLM configured) cannot be made to call a "
        "tool; send 'auto' or 'none'"
    )
    check_support(hub, docs, Options(tool_choice="required"))  # no tools: nothing to force


def test_an_llm_that_takes_json_but_cannot_be_forced_to_call_is_named(hub: Hub) -> None:
    notes = hub.collection("notes")
    check_support(hub, notes, Options(response_format={"type": "json_object"}))
    forced = Options(tools=({"type": "function"},), tool_choice={"type": "function"})
    with pytest.raises(InvalidRequest) as refused:
        check_support(hub, notes, forced)
    assert refused.value.message.startswith("tool_choice: this collection's LLM (")


def test_a_question_with_no_evidence_is_answered_without_an_llm(hub: Hub) -> None:
    answer = start_reply(
        hub, "rag/docs", Conversation("How do refunds work?", [], None), None, None
    )
    assert answer.model == "rag/docs" and answer.collection.name == "docs"
    assert answer.stream.generator == "none" and answer.stream.passages == []
    assert answer.retrieval is not None and answer.retrieval["query"] == "How do refunds work?"
    assert answer.structured is False and answer.footer() == ""


def test_a_named_collection_refuses_json_before_searching(hub: Hub) -> None:
    asked = Options(response_format={"type": "json_object"})
    with pytest.raises(InvalidRequest) as refused:
        start_reply(hub, "docs", Conversation("Q?", [], None), None, None, asked, "text.format")
    assert refused.value.param == "text.format"


def test_a_task_prompt_without_an_llm_gets_its_minimal_json(hub: Hub) -> None:
    answer = start_reply(hub, "docs", Conversation(TITLE_PROMPT, [], None), None, None)
    assert json.loads(answer.text())["title"]
    assert answer.stream.generator == "none" and answer.retrieval is None
    assert answer.extra() == {"sources": [], "generator": "none"}


def test_a_retrieval_free_model_needs_an_llm(hub: Hub) -> None:
    with pytest.raises(InvalidRequest) as refused:
        start_reply(hub, "docs:llm", Conversation("Q?", [], None), None, None)
    assert refused.value.param == "model"
    assert refused.value.message == (
        "model: 'docs:llm' has no LLM to answer without retrieval ('docs' answers "
        "extractively); it takes only client task prompts (docs/openai.md)"
    )
    answer = start_reply(hub, "notes:llm", Conversation("Q?", [], None), None, None)
    assert answer.collection.name == "notes" and answer.retrieval is None


def test_a_linked_footer_escapes_the_source_and_shows_the_originals_address(hub: Hub) -> None:
    stored = StoredChunk({"source": "help [v2]\\x.md", "url": "https://x.org/a"})
    passage = Passage("1", "help [v2]\\x.md", 0, 1.0, "t", {}, stored=stored)
    signed = links()
    answer = reply(hub, Started(["x [1]"], [passage]), base_url="https://hub", links=signed)
    url = signed.url("https://hub", "docs", "help [v2]\\x.md", 0)
    assert answer.text() == (
        f"x [1]\n\nSources: [1] [help \\[v2\\]\\\\x.md]({url}) [↗](https://x.org/a)"
    )


@dataclass(frozen=True)
class Quote:
    """A cited text that is no search passage: a source and a text, nothing else."""

    source: str
    text: str


def test_a_cited_text_that_is_no_passage_links_to_the_replys_collection_at_chunk_0(
    hub: Hub,
) -> None:
    signed = links()
    answer = reply(
        hub, Started(["x [1]"], [Quote("a.md", "t")]), base_url="https://hub", links=signed
    )
    url = signed.url("https://hub", "docs", "a.md", 0)
    assert answer.text() == f"x [1]\n\nSources: [1] [a.md]({url})"


@pytest.mark.parametrize("text", ["x [0]", "x [4]", "nothing cited"])
def test_a_citation_of_no_passage_cites_them_all_grouped_by_source(hub: Hub, text: str) -> None:
    passages = [*PASSAGES, Passage("3", "a.md", 1, 0.8, "More on refunds.", {})]
    answer = reply(hub, Started([text], passages))
    assert answer.text() == f"{text}\n\nSources: [1, 3] a.md; [2] b.md"


@pytest.fixture
def llm_hub(tmp_path: Path, make_settings, open_hub, ollama) -> Hub:
    llm = {**LLM, "base_url": ollama.url}
    config = write_config(tmp_path / "c.yaml", {"notes": hash_collection(llm=llm)})
    return open_hub(make_settings(config, "memory"))


def chats(ollama: FakeOllama) -> list[dict]:
    return [r.body for r in ollama.requests if r.path == "/api/chat"]


def test_a_retrieval_free_model_sends_the_conversation_as_it_came(
    llm_hub: Hub, ollama: FakeOllama
) -> None:
    conversation = Conversation(
        "Q?", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}], "Sys"
    )
    answer = start_reply(llm_hub, "notes:llm", conversation, 0.3, 40, Options(top_p=0.5))
    assert answer.model == "notes:llm" and answer.text() == "From the LLM."
    [sent] = chats(ollama)
    assert sent["messages"] == conversation.messages()
    assert sent["options"]["temperature"] == 0.3 and sent["options"]["num_predict"] == 40
    assert sent["options"]["top_p"] == 0.5


def test_a_question_offering_tools_reaches_the_llm_even_without_evidence(
    llm_hub: Hub, ollama: FakeOllama
) -> None:
    after = [{"role": "tool", "tool_call_id": "c", "content": "#42"}]
    conversation = Conversation("Open a ticket", [{"role": "user", "content": "Hi"}], "Sys", after)
    tools = (
        {"type": "function", "function": {"name": "ticket", "parameters": {"type": "object"}}},
    )
    answer = start_reply(llm_hub, "notes", conversation, 0.7, 30, Options(tools=tools))
    assert answer.text() == "From the LLM."
    assert answer.collection.name == "notes" and answer.model == "notes"
    [sent] = chats(ollama)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "user", "tool"]
    assert "Sys" in sent["messages"][0]["content"]
    assert [m["content"] for m in sent["messages"][1:]] == ["Hi", "Open a ticket", "#42"]
    assert sent["options"]["temperature"] == 0.7 and sent["options"]["num_predict"] == 30
    assert sent["tools"] == list(tools)


@pytest.mark.parametrize(
    ("question", "collection", "language"),
    [
        ("¿Cuánto cuesta el plan profesional al mes?", "notes", "es"),
        ("How do refunds work?", "docs", "en"),
    ],
)
def test_auto_answers_from_the_collection_routed_to_in_the_questions_language(
    hub: Hub, question: str, collection: str, language: str
) -> None:
    answer = start_reply(hub, "auto", Conversation(question, [], None), None, None)
    assert answer.model == "auto"
    assert (answer.collection.name, answer.language) == (collection, language)
    assert answer.routing is not None and answer.routing["decision"]
    assert [c["collection"] for c in answer.routing["candidates"]] == ["docs", "quiet", "notes"]


def test_auto_refuses_json_once_routed_to_a_collection_without_an_llm(hub: Hub) -> None:
    asked = Options(response_format={"type": "json_object"})
    with pytest.raises(InvalidRequest) as refused:
        start_reply(hub, "auto", Conversation("How do refunds work?", [], None), None, None, asked)
    assert refused.value.param == "response_format"
