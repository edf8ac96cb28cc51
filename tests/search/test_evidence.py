"""Source evidence on hand-computed scores: a passage ranks by its score plus a share of the two
best scores of its source's other candidates (rag_api.search.evidence)."""

from __future__ import annotations

from rag_api.search.evidence import with_source_evidence

# (passage, source, score), best first as fusion returned them
HITS = [("A1", "a", 0.9), ("B1", "b", 0.8), ("B2", "b", 0.7), ("C1", "c", 0.6), ("B3", "b", 0.5)]
HITS += [("A2", "a", 0.1), ("B4", "b", 0.05), ("D1", "d", -0.2)]


def ranked(share: float, hits=HITS) -> list[tuple[str, float]]:
    out = with_source_evidence(hits, share, lambda h: h[1], lambda h: h[2])
    return [(h[0], round(score, 6)) for h, score in out]


def test_a_passage_gains_a_share_of_its_two_best_siblings() -> None:
    assert ranked(0.2) == [
        ("B1", 1.04),  # 0.8 + 0.2 * (0.7 + 0.5): B4 is a third sibling, not counted
        ("B2", 0.96),  # 0.7 + 0.2 * (0.8 + 0.5)
        ("A1", 0.92),  # 0.9 + 0.2 * 0.1
        ("B3", 0.8),  # 0.5 + 0.2 * (0.8 + 0.7)
        ("C1", 0.6),  # alone in its source
        ("B4", 0.35),  # 0.05 + 0.2 * (0.8 + 0.7)
        ("A2", 0.28),  # 0.1 + 0.2 * 0.9
        ("D1", -0.2),
    ]


def test_the_first_passage_of_each_source_ranks_it_as_max_plus_share_of_the_next() -> None:
    firsts: list[str] = []
    for name, _ in ranked(0.1):
        if name[0] not in firsts:
            firsts.append(name[0])
    # a: 0.9 + 0.1*0.1 = 0.91; b: 0.8 + 0.1*1.2 = 0.92; c: 0.6; d: -0.2
    assert firsts == ["B", "A", "C", "D"]


def test_share_zero_keeps_scores_and_order() -> None:
    assert ranked(0.0) == [(name, score) for name, _, score in HITS]


def test_negative_scores_add_nothing_and_ties_keep_the_fused_order() -> None:
    hits = [("X1", "x", 0.5), ("Y1", "y", 0.5), ("X2", "x", -0.4), ("Y2", "y", -0.1)]
    assert ranked(0.5, hits) == [("X1", 0.5), ("Y1", 0.5), ("Y2", 0.15), ("X2", -0.15)]
