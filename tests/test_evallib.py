"""scripts.evallib: hand-computed trec_eval-style metrics and the real dataset loaders."""

import time
from math import log2
from pathlib import Path

import pytest

from scripts.evallib import (
    Dataset,
    Doc,
    chunks_to_docs,
    default_data_dir,
    evaluate,
    latency_summary,
    load_dataset,
    mrr_at_k,
    rank,
    subsample,
)

GRADED_QRELS = {"q1": {"a": 3, "b": 2, "c": 1, "d": 0, "e": 2}}
GRADED_RUN = {
    "q1": [("c", 0.4), ("x", 0.9), ("d", 0.7), ("a", 0.8), ("y", 0.5), ("b", 0.6)],
}


def test_ndcg_at_10_graded_hand_computed() -> None:
    # Ranked by score: 1 x(0) 2 a(3) 3 d(0) 4 b(2) 5 y(0) 6 c(1); e (grade 2) is not retrieved.
    # DCG  = 3/log2(3) + 2/log2(5) + 1/log2(7)
    #      = 1.8927892607 + 0.8613531161 + 0.3562071871 = 3.1103495640
    # IDCG = grades 3,2,2,1 at ranks 1-4 = 3/1 + 2/log2(3) + 2/log2(4) + 1/log2(5)
    #      = 3 + 1.2618595071 + 1 + 0.4306765581 = 5.6925360652
    # nDCG@10 = 3.1103495640 / 5.6925360652 = 0.5463908403
    scores = evaluate(GRADED_RUN, GRADED_QRELS, ks=(10,)).per_query["q1"]
    expected = (3 / log2(3) + 2 / log2(5) + 1 / log2(7)) / (3 + 2 / log2(3) + 1 + 1 / log2(5))
    assert scores["ndcg@10"] == pytest.approx(expected, abs=1e-9)
    assert scores["ndcg@10"] == pytest.approx(0.5463908402749824, abs=1e-9)


def test_ndcg_cut_truncates_the_ideal_too() -> None:
    # @2: DCG = 3/log2(3); IDCG = 3/1 + 2/log2(3) (only the top 2 grades), not all four.
    scores = evaluate(GRADED_RUN, GRADED_QRELS, ks=(2,)).per_query["q1"]
    assert scores["ndcg@2"] == pytest.approx((3 / log2(3)) / (3 + 2 / log2(3)), abs=1e-9)


def test_recall_at_k_counts_grade_above_zero_only() -> None:
    # Relevant = {a, b, c, e} (d has grade 0): top 2 holds a -> 1/4, top 4 a,b -> 2/4, top 10 -> 3/4.
    scores = evaluate(GRADED_RUN, GRADED_QRELS, ks=(2, 4, 10)).per_query["q1"]
    assert (scores["recall@2"], scores["recall@4"], scores["recall@10"]) == (0.25, 0.5, 0.75)


def test_mrr_first_relevant_at_rank_three() -> None:
    run = {"q": [("n1", 3.0), ("n2", 2.0), ("r", 1.0), ("r2", 0.5)]}
    qrels = {"q": {"r": 1, "r2": 2, "n2": 0}}
    scores = evaluate(run, qrels, ks=(2, 3, 10)).per_query["q"]
    assert scores["mrr@10"] == pytest.approx(1 / 3, abs=1e-12)
    assert scores["mrr@3"] == pytest.approx(1 / 3, abs=1e-12)
    assert scores["mrr@2"] == 0.0


def test_ties_break_by_doc_id_descending() -> None:
    hits = [("a", 1.0), ("d10", 1.0), ("z", 2.0), ("d9", 1.0), ("b", 1.0)]
    assert rank(hits) == ["z", "d9", "d10", "b", "a"]
    # The tie order changes the score: "b" outranks the relevant "a".
    assert mrr_at_k(rank([("a", 1.0), ("b", 1.0)]), {"a": 1}, 10) == 0.5


def test_duplicate_doc_in_a_query_is_rejected() -> None:
    with pytest.raises(ValueError, match="twice"):
        rank([("a", 1.0), ("a", 0.5)])


def test_query_without_results_scores_zero_and_counts_in_mean() -> None:
    qrels = {"hit": {"a": 1}, "missing": {"b": 1}, "empty": {"c": 1}}
    run = {"hit": [("a", 1.0)], "empty": []}
    result = evaluate(run, qrels, ks=(10,))
    for qid in ("missing", "empty"):
        assert result.per_query[qid] == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    assert result.mean == {"ndcg@10": 1 / 3, "recall@10": 1 / 3, "mrr@10": 1 / 3}


def test_queries_without_relevant_judgements_are_skipped() -> None:
    qrels = {"q": {"a": 1}, "only_zero": {"b": 0}, "no_judgements": {}}
    run = {"q": [("a", 1.0)], "only_zero": [("b", 1.0)], "not_in_qrels": [("a", 1.0)]}
    result = evaluate(run, qrels)
    assert set(result.per_query) == {"q"}
    assert result.mean == {"ndcg@10": 1.0, "recall@10": 1.0, "mrr@10": 1.0}


def test_evaluate_without_any_judged_query_raises() -> None:
    with pytest.raises(ValueError, match="no query"):
        evaluate({"q": [("a", 1.0)]}, {"q": {"a": 0}})


def test_chunks_to_docs_takes_each_docs_best_chunk_in_first_occurrence_order() -> None:
    chunks = [("a#0", 0.5), ("b#0", 0.8), ("a#1", 0.9), ("c#2", 0.1), ("b#1", 0.3)]
    docs = chunks_to_docs(chunks, lambda chunk: chunk.split("#")[0])
    assert docs == [("a", 0.9), ("b", 0.8), ("c", 0.1)]


def test_latency_summary_uses_linear_percentiles_in_ms() -> None:
    summary = latency_summary([0.1, 0.2, 0.3, 0.4])
    # p95: position 0.95 * 3 = 2.85 between 300 ms and 400 ms -> 385 ms.
    assert summary == pytest.approx({"p50_ms": 250.0, "p95_ms": 385.0, "mean_ms": 250.0})
    with pytest.raises(ValueError):
        latency_summary([])


def _toy_dataset() -> Dataset:
    corpus = {f"d{i}": Doc("", f"text {i}") for i in range(100)}
    queries = {f"q{i}": f"question {i}" for i in range(20)}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{i + 50}": 0} for i in range(20)}
    return Dataset("toy", "en", corpus, queries, qrels)


def test_subsample_is_deterministic_and_keeps_relevant_docs() -> None:
    toy = _toy_dataset()
    small = subsample(toy, max_queries=5, max_docs=12, seed=7)
    assert small == subsample(toy, max_queries=5, max_docs=12, seed=7)
    assert len(small.queries) == 5 and set(small.qrels) == set(small.queries)
    assert len(small.corpus) == 12
    assert all(doc in small.corpus for rels in small.qrels.values() for doc in rels if rels[doc])
    assert subsample(toy, max_queries=5, seed=8).queries != small.queries
    assert subsample(toy) == toy


def test_subsample_keeps_all_relevant_docs_even_beyond_max_docs() -> None:
    small = subsample(_toy_dataset(), max_docs=3)
    assert set(small.corpus) == {f"d{i}" for i in range(20)}


def test_load_dataset_rejects_unknown_names_and_splits(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("msmarco", tmp_path)
    with pytest.raises(ValueError, match="only a 'test' split"):
        load_dataset("xquad-es", tmp_path, split="train")


def _data_dir(subdir: str) -> Path:
    data_dir = default_data_dir()
    if not (data_dir / subdir).is_dir():
        pytest.skip(f"eval data not found at {data_dir / subdir} (set RAG_EVAL_DATA)")
    return data_dir


def test_load_scifact_counts() -> None:
    data_dir = _data_dir("scifact")
    start = time.perf_counter()
    ds = load_dataset("scifact", data_dir)
    assert time.perf_counter() - start < 5  # typically ~0.1 s; loose bound for slow CI machines
    assert (ds.name, ds.language) == ("scifact", "en")
    assert len(ds.corpus) == 5183
    assert len(ds.queries) == 300 and set(ds.qrels) == set(ds.queries)
    assert sum(len(rels) for rels in ds.qrels.values()) == 339
    assert {g for rels in ds.qrels.values() for g in rels.values()} == {1}
    assert all(doc in ds.corpus for rels in ds.qrels.values() for doc in rels)
    assert ds.queries["1"] == "0-dimensional biomaterials show inductive properties."
    assert ds.corpus["4983"].title.startswith("Microstructural development of human newborn")


def test_load_scifact_subsampled() -> None:
    ds = load_dataset("scifact", _data_dir("scifact"), max_queries=50, max_docs=1000, seed=3)
    assert len(ds.queries) == 50 and len(ds.corpus) == 1000
    assert all(doc in ds.corpus for rels in ds.qrels.values() for doc in rels)


@pytest.mark.parametrize("name", ["xquad-es", "xquad-en"])
def test_load_xquad_counts(name: str) -> None:
    ds = load_dataset(name, _data_dir("xquad"))
    assert ds.language == name[-2:]
    assert len(ds.corpus) == 240 and len(ds.queries) == 1190
    assert sum(len(rels) for rels in ds.qrels.values()) == 1190
    assert set(ds.corpus) == {doc for rels in ds.qrels.values() for doc in rels}
    assert "0-0" in ds.corpus and "47-4" in ds.corpus


def test_load_squad_it_merges_duplicate_paragraphs() -> None:
    ds = load_dataset("squad-it", _data_dir("squad-it"))
    assert ds.language == "it"
    assert len(ds.corpus) == 2007 and len(ds.queries) == 7609
    assert sum(len(rels) for rels in ds.qrels.values()) == 7609
    # Article 3's paragraphs 0 and 22 share one text: merged under the first id, 3 + 3 questions.
    assert "3-22" not in ds.corpus
    assert sum(1 for rels in ds.qrels.values() if "3-0" in rels) == 6


def test_sign_test_exact_by_hand() -> None:
    from scripts.evallib.paired import sign_test

    # 5 wins, 0 losses: both tails of a fair coin, 2 * (1/2)^5
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    # 2 wins, 1 loss: P(X <= 1) = (1 + 3) / 8, doubled and capped at 1
    assert sign_test(2, 1) == 1.0
    # 8 / 2: (1 + 10 + 45) / 1024 doubled
    assert sign_test(8, 2) == pytest.approx(112 / 1024)
    assert sign_test(0, 0) == 1.0


def test_paired_difference_interval_holds_the_mean_and_excludes_zero_only_when_clear() -> None:
    from scripts.evallib.paired import paired_difference

    clear = paired_difference([1.0] * 40 + [0.5] * 10, [0.5] * 40 + [0.5] * 10)
    assert clear.mean == pytest.approx(0.4)
    assert 0 < clear.low <= clear.mean <= clear.high
    assert (clear.wins, clear.losses) == (40, 0)
    assert clear.sign_p < 1e-10

    coin = [1.0, 0.0] * 25
    unclear = paired_difference(coin, coin[1:] + coin[:1])  # 25 wins, 25 losses, mean 0
    assert unclear.mean == pytest.approx(0.0)
    assert unclear.low < 0 < unclear.high
    assert unclear.sign_p == 1.0
    assert paired_difference(coin, coin[::-1]) == paired_difference(coin, coin[::-1])  # seeded
    with pytest.raises(ValueError):
        paired_difference([], [])


def test_fresh_questions_gives_each_pass_its_own_and_names_the_most_allowed(monkeypatch) -> None:
    from scripts.evallib import datasets

    monkeypatch.setattr(datasets, "distinct_questions", lambda _: [f"q{i}" for i in range(10)])
    blocks = datasets.fresh_questions("unused", ("a", "b"), warm_up=2, measured=3)
    assert blocks == {
        "a": (["q0", "q1"], ["q2", "q3", "q4"]),
        "b": (["q5", "q6"], ["q7", "q8", "q9"]),
    }
    with pytest.raises(SystemExit, match="--queries at most 3"):
        datasets.fresh_questions("unused", ("a", "b"), warm_up=2, measured=4)


def test_squad_answers_reads_the_gold_texts_by_question(tmp_path: Path) -> None:
    import json

    from scripts.evallib import squad_answers

    (tmp_path / "xquad").mkdir()
    qas = [{"id": "x1", "question": "?", "answers": [{"text": "uno"}, {"text": "one"}]}]
    data = {"data": [{"paragraphs": [{"context": "c", "qas": qas}]}]}
    (tmp_path / "xquad" / "xquad.es.json").write_text(json.dumps(data))
    assert squad_answers("xquad-es", tmp_path) == {"x1": ["uno", "one"]}


def test_nearest_p95_takes_the_rank_below_without_interpolating() -> None:
    from scripts.evallib.stats import nearest_p95_ms

    assert nearest_p95_ms([0.4, 0.1, 0.3, 0.2]) == pytest.approx(300.0)  # int(0.95 * 3) = 2
    assert nearest_p95_ms([]) != nearest_p95_ms([])  # nan


def test_side_by_side_ratios_put_the_run_over_its_baseline() -> None:
    from scripts.evallib.baseline import change, ratios

    assert change(before=2.0, now=1.0) == "0.50 (2.00 -> 1.00 ms)"
    assert ratios([0.2] * 4, [0.1] * 4) == "p50 2.00x, p95 2.00x"


def test_hub_config_names_the_first_collection_the_default(tmp_path: Path) -> None:
    from rag_api.config import load_config
    from scripts.evallib.hub import HASH, written_settings

    settings = written_settings(
        tmp_path / "b", {"one": {"embedder": HASH}, "two": {"embedder": HASH}}
    )
    assert settings.data_dir == tmp_path / "b" / "data"
    config = load_config(settings.config)
    assert config.default_collection == "one" and set(config.collections) == {"one", "two"}
