"""Requests that are not questions to the knowledge base: Open WebUI's own task prompts (the
templates it really sends, tests/data/openwebui_task_prompts.json) skip retrieval even when sent
to a collection's model, and `<collection>:llm` reaches the collection's LLM without retrieval."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag_api.openai_compat.tasks import task_prompt
from tests.support.openai_support import REFUND, ask

SAMPLES = json.loads(
    (Path(__file__).parents[2] / "data" / "openwebui_task_prompts.json").read_text("utf-8")
)
HISTORY = f"USER: {REFUND}\nASSISTANT: You can ask for a full refund within 30 days [1]."


def rendered(template: str) -> str:
    """The prompt as Open WebUI fills it in (utils/task.py: the last messages as ROLE: lines)."""
    for n in (2, 6):
        template = template.replace(f"{{{{MESSAGES:END:{n}}}}}", HISTORY)
    return template.replace("{{CURRENT_DATE}}", "2025-06-01")


PROMPTS = [(entry["task"], rendered(entry["template"])) for entry in SAMPLES["templates"].values()]
MINIMAL = {
    "title": {"title": REFUND},
    "tags": {"tags": []},
    "follow_ups": {"follow_ups": []},
    "queries": {"queries": []},
}


@pytest.mark.parametrize(("task", "prompt"), PROMPTS, ids=[task for task, _ in PROMPTS])
def test_without_an_llm_a_task_prompt_gets_the_json_it_asks_for(client, task, prompt):
    for model in ("plain", "plain:llm"):
        reply = client.chat.completions.create(model=model, messages=ask(prompt))
        assert json.loads(reply.choices[0].message.content) == MINIMAL[task]
        assert reply.model_extra["sources"] == []  # no passages: nothing was retrieved


@pytest.mark.parametrize(("task", "prompt"), PROMPTS, ids=[task for task, _ in PROMPTS])
def test_with_an_llm_a_task_prompt_goes_to_it_as_sent(client, upstreams, task, prompt):
    _, relay = upstreams
    relay.reply = json.dumps(MINIMAL[task])
    reply = client.chat.completions.create(model="relay", messages=ask(prompt))
    assert json.loads(reply.choices[0].message.content) == MINIMAL[task]
    assert relay.calls("/v1/chat/completions")[-1].body["messages"] == ask(prompt.strip())


def test_the_retrieval_free_model_answers_the_conversation_as_sent(client, server, upstreams):
    ollama, relay = upstreams
    relay.reply = "Hello there."
    messages = [{"role": "system", "content": "You are terse."}, *ask(REFUND)]
    reply = client.chat.completions.create(model="relay:llm", messages=messages)
    assert reply.choices[0].message.content == "Hello there."  # no Sources footer
    assert reply.model == "relay:llm" and reply.model_extra["sources"] == []
    assert relay.calls("/v1/chat/completions")[-1].body["messages"] == messages
    done = client.responses.create(model="docs:llm", input=REFUND)
    assert ollama.calls("/api/chat")[-1].body["messages"] == ask(REFUND)
    assert done.model_extra["sources"] == []
    listed = [m.id for m in client.models.list()]
    assert {"relay:llm", "docs:llm"} <= set(listed) and "plain:llm" not in listed
    assert client.models.retrieve("relay:llm").id == "relay:llm"


def test_a_question_to_the_retrieval_free_model_of_an_extractive_collection_is_refused(server):
    body = {"model": "plain:llm", "messages": ask(REFUND)}
    response = httpx.post(server.url + "/v1/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "model"


def test_a_question_is_not_taken_for_a_task_prompt(client):
    prompt = PROMPTS[0][1]
    for text in (
        REFUND,
        prompt.replace("### Task:", "Task:"),  # not the template's opening
        prompt.split("<chat_history>")[0],  # no chat quoted
        '### Task:\nAnswer.\n<chat_history>\nUSER: { "title": "x" }\n</chat_history>',
    ):
        assert task_prompt(text) is None, text
    reply = client.chat.completions.create(model="plain", messages=ask(REFUND))
    assert reply.model_extra["sources"][0]["source"] == "billing.md"


@pytest.mark.parametrize(
    ("question", "title"),
    [
        (REFUND, REFUND),
        ("¿Cuánto cuesta el plan Profesional?", "¿Cuánto cuesta el plan Profesional?"),
        (
            "¿Cuánto cuesta el plan Profesional para un equipo de doce personas al año?",
            "¿Cuánto cuesta el plan Profesional…?",
        ),
        (
            "Which cipher protects data at rest, and who holds the keys for it?",
            "Which cipher protects data at rest…?",
        ),
        (
            "Export every notebook of the workspace as Markdown, attachments included",
            "Export every notebook of the workspace…",
        ),
        ("  Refund   window  ", "Refund window"),
    ],
)
def test_a_title_without_an_llm_is_the_question_cut_after_a_whole_phrase(question, title):
    prompt = rendered(
        SAMPLES["templates"]["DEFAULT_TITLE_GENERATION_PROMPT_TEMPLATE"]["template"]
    ).replace(REFUND, question)
    answer = json.loads(task_prompt(prompt).minimal_answer())["title"]
    assert answer == title and len(answer) <= 50
