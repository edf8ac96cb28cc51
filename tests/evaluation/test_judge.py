"""One question judged from what retrieval returned: metrics against hand-computed values, by
source and by chunk text, and the outcome shares; the question file's format and its errors."""

from __future__ import annotations

from math import log2
from pathlib import Path

import pytest

from rag_api.config import RetrievalConfig
from rag_api.errors import InvalidRequest
from rag_api.evaluation.questions import Question, load_questions
from rag_api.evaluation.run import NO_ANSWER, RIGHT, WRONG_SOURCE, RunResult, judge
from rag_api.evaluation.scoring import hit_at_k
from rag_api.search.passage import Passage


def passage(source: str, index: int = 0, text: str = "") -> Passage:
    return Passage(f"{source}#{index}", source, index, 1.0, text or f"{source} {index}", {})


def test_hit_at_k() -> None:
    assert hit_at_k(["x", "a"], {"a": 1}, 1) == 0.0
    assert hit_at_k(["x", "a"], {"a": 1}, 2) == 1.0
    assert hit_at_k(["a"], {"a": 0}, 1) == 0.0


def test_by_source_chunks_collapse_to_their_source() -> None:
    # passages: x#0, a#0, x#1, b#0 -> sources x, a, b: relevant a (rank 2) and c (not found)
    ranked = [passage("x"), passage("a"), passage("x", 1), passage("b")]
    question = Question("q", sources=("a", "c"))
    judged = judge(question, ranked, ranked[:2], k=2)
    # DCG = 1/log2(3); IDCG = 1 + 1/log2(3) (two relevant sources)
    assert judged.ndcg == pytest.approx((1 / log2(3)) / (1 + 1 / log2(3)), abs=1e-12)
    assert judged.recall == 0.5  # a of {a, c} in the top 2 sources
    assert judged.mrr == 0.5 and judged.hit1 == 0.0
    assert judged.first_right == 2 and judged.outcome == RIGHT


def test_by_answer_text_only_the_chunk_holding_it_counts() -> None:
    ranked = [
        passage("faq.md", 0, "Plans and prices"),
        passage("faq.md", 1, "Refunds within 30\n DAYS of payment"),
        passage("faq.md", 2, "Refunds again: within 30 days"),
    ]
    question = Question("q", sources=("faq.md",), answer="within 30 days")
    judged = judge(question, ranked, ranked[:1], k=10)
    # units: faq.md#0, right chunk (rank 2), right chunk again (collapsed) -> one relevant unit
    assert judged.ndcg == pytest.approx(1 / log2(3), abs=1e-12)
    assert judged.mrr == 0.5 and judged.recall == 1.0 and judged.hit1 == 0.0
    assert judged.outcome == WRONG_SOURCE  # the answer (top 1) holds only faq.md#0
    assert question.holds("faq.md", "… REFUNDS within   30 days …")
    assert not question.holds("other.md", "within 30 days")


def test_out_of_scope_questions_score_their_refusal() -> None:
    off = Question("What is the capital of Australia?")
    assert judge(off, [], [], 10).score == 1.0 and judge(off, [], [], 10).outcome == RIGHT
    answered = judge(off, [passage("a")], [passage("a")], 10)
    assert answered.score == 0.0 and answered.outcome == WRONG_SOURCE and answered.ndcg is None
    silent = judge(Question("q", sources=("a",)), [], [], 10)
    assert silent.outcome == NO_ANSWER and silent.score == 0.0


def test_summary_shares() -> None:
    scoped = Question("q", sources=("a",))
    judged = [
        judge(scoped, [passage("a")], [passage("a")], 10),  # right
        judge(scoped, [], [], 10),  # no answer
        judge(scoped, [passage("b")], [passage("b")], 10),  # wrong source
        judge(Question("off"), [passage("b")], [passage("b")], 10),  # out of scope, answered
    ]
    summary = RunResult(RetrievalConfig(), judged).summary(10)
    assert summary["ndcg@10"] == pytest.approx(1 / 3, abs=1e-4)
    assert summary["no_answer"] == pytest.approx(1 / 3, abs=1e-4)  # of the in-scope questions
    assert summary["wrong_source"] == 0.5  # of all questions
    assert summary["score"] == pytest.approx(0.25)


def test_question_files(tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(
        '{"question": "Refund?", "sources": ["faq.md"], "answer": "30 days"}\n'
        "# a comment\n\n"
        '{"question": "Where?", "source": "a.md", "sources": ["b.md"]}\n'
        '{"question": "Weather today?", "sources": []}\n'
    )
    first, second, off = load_questions(jsonl)
    assert first == Question("Refund?", ("faq.md",), "30 days", id="1")
    assert second.sources == ("a.md", "b.md") and second.id == "4"
    assert not off.in_scope
    csv = tmp_path / "q.csv"
    csv.write_text('question,sources,answer\n"Refund, how long?",faq.md | terms.md,30 days\n')
    (row,) = load_questions(csv)
    assert row.text == "Refund, how long?" and row.sources == ("faq.md", "terms.md")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"question": "x"}\nnot json\n', "line 2: not JSON"),
        ('{"question": "", "sources": []}\n', "line 1: 'question' is missing"),
        ('{"question": "x", "source": 3}\n', "line 1: 'sources' must be a list"),
        ('{"question": "x", "typo": 1}\n', "line 1: unknown field(s) typo"),
        ("", "no questions"),
    ],
)
def test_bad_question_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(content)
    with pytest.raises(InvalidRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_questions(path)
    with pytest.raises(InvalidRequest, match="not found"):
        load_questions(tmp_path / "missing.jsonl")
