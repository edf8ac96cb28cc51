"""Conversations from OpenAI messages and Responses input, follow-up detection, the citations footer."""

from __future__ import annotations

import pytest

from rag_api.embedding.bm25 import sparse_encoder
from rag_api.errors import InvalidRequest
from rag_api.openai_compat.condense import read_question
from rag_api.openai_compat.conversation import from_chat, from_responses
from rag_api.openai_compat.models import ChatMessage
from rag_api.openai_compat.reply import citations_footer
from rag_api.payload import StoredChunk
from rag_api.search.passage import Passage


def messages(*pairs: tuple[str, object]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content) for role, content in pairs]


def test_chat_conversation_keeps_system_history_and_the_last_question():
    conversation = from_chat(
        messages(
            ("system", "Be brief."),
            ("user", "Hi"),
            ("assistant", "Hello!"),
            ("tool", "tool output the hub does not use"),
            ("developer", [{"type": "text", "text": "Answer in English."}]),
            (
                "user",
                [
                    {"type": "image_url", "image_url": {"url": "x"}},
                    {"type": "text", "text": " Q? "},
                ],
            ),
            ("assistant", ""),
        )
    )
    assert conversation.question == "Q?"
    assert conversation.system == "Be brief.\n\nAnswer in English."
    assert conversation.history == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    assert conversation.previous_question() == "Hi"


def test_responses_input_is_flattened_recursively():
    items = [
        {"role": "system", "content": "From input."},
        {"role": "user", "content": [{"type": "input_text", "text": "First?"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Answer one.", "annotations": []}],
        },
        {"type": "input_text", "text": "Second"},  # parts without a message: one user turn
        [{"text": {"type": "input_text", "text": "question?"}}],
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
    ]
    conversation = from_responses(items, "Instructions.")
    assert conversation.question == "Second\nquestion?"
    assert conversation.system == "Instructions.\n\nFrom input."
    assert conversation.history == [
        {"role": "user", "content": "First?"},
        {"role": "assistant", "content": "Answer one."},
    ]
    assert from_responses("Just this?", None).question == "Just this?"


@pytest.mark.parametrize(
    ("items", "param"),
    [
        ([{"role": "user", "content": [{"type": "input_vid"}]}], "input[0].content[0].type"),
        (
            [{"role": "user", "content": [{"type": "input_text", "text": 7}]}],
            "input[0].content[0].text",
        ),
        ([{"type": "web_search_call", "id": "ws_1"}], "input[0].type"),
        ([{"role": "user", "content": {"no": "text"}}], "input[0].content"),
        ([{"role": "assistant", "content": "Only an answer."}], "input"),
        ([3], "input[0]"),
    ],
)
def test_malformed_input_names_the_bad_part(items, param):
    with pytest.raises(InvalidRequest) as info:
        from_responses(items, None)
    assert info.value.param == param and info.value.message.startswith(param)


@pytest.mark.parametrize(
    ("language", "question", "expected"),
    [
        ("en", "and how much does it cost?", True),
        ("en", "How do I fix it?", True),
        ("en", "What about flights?", True),
        ("en", "What is SAML?", False),
        ("en", "Which keyboard shortcut jumps to a page?", False),
        ("en", "And which plans include SAML single sign-on, audit logs and EU residency?", False),
        ("es", "¿Y cuánto cuesta?", True),
        ("es", "¿Cuánto cuesta eso al mes?", True),
        ("es", "¿Cuánto cuesta la licencia?", False),
        ("it", "E quanto costa?", True),
        ("it", "Quanto costa la licenza?", False),
    ],
)
def test_follow_up_detection(language, question, expected):
    read = read_question(question, language, sparse_encoder(language))
    assert (read.reading != "own") is expected  # dependent, or searched both ways


def test_citations_footer_lists_cited_sources_grouped():
    passages = [
        Passage(str(n), source, 0, 1.0, "text", {})
        for n, source in enumerate(["a.md", "b.md", "a.md"], 1)
    ]
    assert citations_footer("x [3] y [1] z [9]", passages, "en") == "\n\nSources: [1, 3] a.md"
    assert citations_footer("nothing cited", passages, "es") == "\n\nFuentes: [1, 3] a.md; [2] b.md"


def test_with_a_link_each_cited_passage_is_a_markdown_link_of_its_own():
    passages = [
        Passage(str(n), source, 0, 1.0, "text", {})
        for n, source in enumerate(["a.md", "notes [draft].md", "a.md"], 1)
    ]
    footer = citations_footer("x [3] y [2] [1]", passages, "en", link=lambda p: f"https://h/{p.id}")
    assert footer == (
        "\n\nSources: [1] [a.md](https://h/1); [2] [notes \\[draft\\].md](https://h/2); "
        "[3] [a.md](https://h/3)"  # two passages of one document: two links
    )


def test_a_passage_whose_source_has_its_own_address_shows_it_beside_its_link():
    stored = StoredChunk({"source": "help:https://x.org/a", "url": "https://x.org/a"})
    passage = Passage("1", "help:https://x.org/a", 0, 1.0, "text", {}, stored=stored)
    footer = citations_footer("x [1]", [passage], "en", link=lambda p: "https://h/p")
    assert footer == "\n\nSources: [1] [help:https://x.org/a](https://h/p) [↗](https://x.org/a)"
