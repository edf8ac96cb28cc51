"""The follow-up rule's searches, decided on passages given by hand (the shipped kb's tables are
test_condense.py's, on real models): what is searched for each reading of a turn, and when the
merged search of an undecided turn wins, on the answering collection's own cosine scale."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.hub import Hub
from rag_api.openai_compat.condense import MERGE_MARGIN, Retrieval, condensed_search
from rag_api.openai_compat.conversation import Conversation
from rag_api.points.collection import Collection
from rag_api.routing.found import Found
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config

PREVIOUS = "How many days do I have to ask for a refund?"
MERGED = f"{PREVIOUS}\nWhat about SSO?"


@pytest.fixture
def hub(tmp_path: Path, make_settings, open_hub) -> Hub:
    config = write_config(
        tmp_path / "c.yaml",
        {
            "docs": hash_collection(retrieval={"threshold": 0.0}),
            "strict": hash_collection(retrieval={"threshold": 0.5}),
        },
    )
    return open_hub(make_settings(config))


def found(collection: Collection, *cosines: float | None) -> Found:
    passages = [
        Passage(str(i), "faq.md", i, 0.5, f"passage {i}", {}, dense_score=cosine)
        for i, cosine in enumerate(cosines)
    ]
    return Found(collection.name, collection, "hybrid", passages, {})


def searched(
    collection: Collection, question: str, *results: Found, previous: str | None = PREVIOUS
) -> tuple[list[str], Found, Retrieval]:
    """The queries searched, in order, and what condensed_search keeps."""
    history = [{"role": "user", "content": previous}, {"role": "assistant", "content": "…"}]
    queries: list[str] = []
    answers = iter(results)

    def search(text: str) -> Found:
        queries.append(text)
        return next(answers)

    conversation = Conversation(question, history if previous else [], None)
    kept, retrieval = condensed_search(conversation, collection, search)
    return queries, kept, retrieval


def test_a_first_question_is_searched_as_asked(hub: Hub) -> None:
    docs = hub.collection("docs")
    alone = found(docs, 0.4)
    assert searched(docs, "What about SSO?", alone, previous=None) == (
        ["What about SSO?"],
        alone,
        Retrieval("What about SSO?", "none", "no previous question"),
    )


def test_a_turn_of_its_own_is_searched_alone_and_a_dependent_one_merged(hub: Hub) -> None:
    docs = hub.collection("docs")
    alone = found(docs, 0.4)
    own = "And how long is the refund window?"
    assert searched(docs, own, alone) == (
        [own],
        alone,
        Retrieval(own, "none", "names its own topic"),
    )
    assert searched(docs, "?", alone) == (
        ["?"],
        alone,
        Retrieval("?", "none", "not a short question"),
    )
    plain = "How long is the refund window?"
    assert searched(docs, plain, alone)[2] == Retrieval(
        plain, "none", "no connective or pronoun leans on the previous question"
    )
    merged = f"{PREVIOUS}\nHow do I fix it?"
    assert searched(docs, "How do I fix it?", alone) == (
        [merged],
        alone,
        Retrieval(merged, "merged", "'it' points back to the previous question"),
    )
    assert searched(docs, "and how much?", alone)[2] == Retrieval(
        f"{PREVIOUS}\nand how much?", "merged", "nothing named after 'and'"
    )


WHY = "short, after 'what about'"
UNDECIDED = [
    # docs (threshold 0): the best cosine of each side, the margin reached or not
    (
        "docs",
        (0.3, 0.5, None),
        (0.7, 0.75),
        "merged",
        "best cosine 0.750 merged, 0.500 alone: clearly better merged",
    ),
    (
        "docs",
        (0.5,),
        (0.74, 0.2),
        "alone",
        "best cosine 0.740 merged, 0.500 alone: not clearly better merged",
    ),
    # strict (threshold 0.5): a gain of 0.15 is 0.3 of the room above the threshold
    (
        "strict",
        (0.6,),
        (0.75,),
        "merged",
        "best cosine 0.750 merged, 0.600 alone: clearly better merged",
    ),
    (
        "strict",
        (0.6,),
        (0.7,),
        "alone",
        "best cosine 0.700 merged, 0.600 alone: not clearly better merged",
    ),
    # a side that finds nothing, or has no cosine, decides without the margin
    ("docs", (), (0.3,), "merged", "alone nothing is found"),
    ("docs", (0.9,), (), "alone", "with the previous question nothing is found"),
    ("docs", (None,), (None,), "merged", "no cosine to compare (sparse mode)"),
    ("docs", (0.9,), (None,), "merged", "no cosine to compare (sparse mode)"),
    ("docs", (None,), (0.1,), "merged", "no cosine to compare (sparse mode)"),
]


@pytest.mark.parametrize(("name", "alone", "merged", "follow_up", "why"), UNDECIDED)
def test_an_undecided_turn_is_merged_only_where_that_finds_clearly_better_evidence(
    hub: Hub, name: str, alone: tuple, merged: tuple, follow_up: str, why: str
) -> None:
    collection = hub.collection(name)
    alone_found, merged_found = found(collection, *alone), found(collection, *merged)
    queries, kept, retrieval = searched(collection, "What about SSO?", alone_found, merged_found)
    assert queries == ["What about SSO?", MERGED]  # alone, then merged
    query = MERGED if follow_up == "merged" else "What about SSO?"
    assert retrieval == Retrieval(query, follow_up, f"{WHY}: {why}")
    assert kept is (merged_found if follow_up == "merged" else alone_found)


def test_a_gain_of_exactly_the_margin_merges(hub: Hub) -> None:
    docs = hub.collection("docs")
    alone, merged = found(docs, 0.5), found(docs, 0.5 + MERGE_MARGIN)
    assert searched(docs, "What about SSO?", alone, merged)[2].follow_up == "merged"


def test_the_retrieval_field_is_its_three_parts() -> None:
    retrieval = Retrieval(MERGED, "merged", "why")
    assert retrieval.as_dict() == {"query": MERGED, "follow_up": "merged", "why": "why"}


def test_under_auto_each_side_is_scaled_by_the_collection_that_answers_it(hub: Hub) -> None:
    # merged, strict (threshold 0.5) answers: 0.75 is half its room, less than docs' 0.6 alone
    alone, merged = found(hub.collection("docs"), 0.6), found(hub.collection("strict"), 0.75)
    assert searched(hub.collection("docs"), "What about SSO?", alone, merged)[2] == Retrieval(
        "What about SSO?",
        "alone",
        f"{WHY}: best cosine 0.750 merged, 0.600 alone: not clearly better merged",
    )
