"""Issue 59's conversation through the official SDK on the shipped kb (`docs`, extractive): after a
refund question, "What about SSO?" and "And how do I cancel?" change the topic and are answered
from their own passages, while "And how long does it take?" still leans on the refund question;
each reply says what was searched in its `retrieval` field, on chat completions and Responses."""

from __future__ import annotations

import openai
import pytest

pytestmark = pytest.mark.slow
REFUND = "How many days do I have to ask for a refund?"
REFUND_PASSAGE = "Refunds go back to the original payment method within 5 to 10 business days"
SSO_PASSAGE = "Business and Enterprise owners can also make SSO mandatory for all members"
CANCEL_PASSAGE = "Only a workspace owner can cancel"


@pytest.fixture(scope="module")
def client(shipped) -> openai.OpenAI:
    return openai.OpenAI(base_url=shipped.url + "/v1", api_key="x", max_retries=0)


def cited(text: str, sources: list[dict]) -> str:
    """The text of the passages the answer cites as [n], its lines joined."""
    return " ".join(
        " ".join(s["text"].split()) for n, s in enumerate(sources, 1) if f"[{n}]" in text
    )


def test_the_issue_conversation_on_chat_completions(client):
    messages = [{"role": "user", "content": REFUND}]
    first = client.chat.completions.create(model="docs", messages=messages)
    assert first.model_extra["retrieval"] == {
        "query": REFUND,
        "follow_up": "none",
        "why": "no previous question",
    }
    answer = first.choices[0].message.content
    chat = [*messages, {"role": "assistant", "content": answer}]
    for question, passage in [
        ("What about SSO?", SSO_PASSAGE),
        ("And how do I cancel?", CANCEL_PASSAGE),
    ]:
        chat.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="docs", messages=chat)
        text, extra = reply.choices[0].message.content, reply.model_extra
        assert passage in cited(text, extra["sources"]), text
        assert REFUND_PASSAGE not in cited(text, extra["sources"])
        retrieval = extra["retrieval"]
        assert (retrieval["query"], retrieval["follow_up"]) == (question, "alone")
        assert "not clearly better merged" in retrieval["why"]
        chat.append({"role": "assistant", "content": text})

    depends = [*messages, {"role": "assistant", "content": answer}]
    depends.append({"role": "user", "content": "And how long does it take?"})
    chunks = list(client.chat.completions.create(model="docs", messages=depends, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    extra = chunks[-1].model_extra
    assert REFUND_PASSAGE in cited(text, extra["sources"]), text
    assert extra["retrieval"]["follow_up"] == "merged"
    assert extra["retrieval"]["query"] == f"{REFUND}\nAnd how long does it take?"
    assert "'it' points back" in extra["retrieval"]["why"]


def test_the_issue_conversation_on_responses(client):
    first = client.responses.create(model="docs", input=REFUND)
    sso = client.responses.create(
        model="docs", input="What about SSO?", previous_response_id=first.id
    )
    assert SSO_PASSAGE in cited(sso.output_text, sso.model_extra["sources"])
    assert sso.model_extra["retrieval"]["follow_up"] == "alone"
    cancel = client.responses.create(
        model="docs", input="And how do I cancel?", previous_response_id=sso.id
    )
    assert CANCEL_PASSAGE in cited(cancel.output_text, cancel.model_extra["sources"])
    assert cancel.model_extra["retrieval"]["follow_up"] == "alone"
    events = list(
        client.responses.create(
            model="docs",
            input="And how long does it take?",
            previous_response_id=first.id,
            stream=True,
        )
    )
    done = events[-1].response
    assert REFUND_PASSAGE in cited(done.output_text, done.model_extra["sources"])
    assert done.model_extra["retrieval"]["follow_up"] == "merged"
