"""The SQuAD v1.1/v2.0 ports against hand-computed cases (official script semantics)."""

from __future__ import annotations

import pytest

from encoderlab.eval.metrics.squad import normalize_answer, squad_v1, squad_v2, token_f1


def test_normalisation_follows_the_official_order():
    assert normalize_answer("The Cat  sat.") == "cat sat"
    assert normalize_answer("An apple, a day!") == "apple day"
    # articles only as whole words; punctuation goes first, so "the-end" becomes "theend"
    assert normalize_answer("theatre the-end") == "theatre theend"


def test_token_f1_counts_repeated_tokens_once_each():
    assert token_f1("dog dog cat", "dog", v2=False) == pytest.approx(0.5)  # P 1, R 1/3
    assert token_f1("x", "", v2=False) == 0.0
    assert token_f1("", "", v2=True) == 1.0 and token_f1("x", "", v2=True) == 0.0


def test_v1_max_over_gold_then_mean():
    gold = {"q1": ["The Cat sat."], "q2": ["a big dog", "the small dog"]}
    pred = {"q1": "cat sat", "q2": "big cat"}  # q2: F1 0.5 against the first gold, 0 against the second
    assert squad_v1(gold, pred) == pytest.approx({"exact_match": 50.0, "f1": 75.0})


def test_v2_scores_splits_thresholds_and_best_threshold():
    gold = {"q1": ["Paris"], "q2": [], "q3": [], "q4": ["New York City"]}
    pred = {"q1": "paris", "q2": "", "q3": "London", "q4": "york"}
    out = squad_v2(gold, pred)
    assert out["exact"] == pytest.approx(50.0) and out["f1"] == pytest.approx(62.5)
    assert out["HasAns_exact"] == pytest.approx(50.0) and out["HasAns_f1"] == pytest.approx(75.0)
    assert out["NoAns_exact"] == pytest.approx(50.0) and out["NoAns_total"] == 2

    na = {"q1": 0.1, "q2": 0.9, "q3": 0.8, "q4": 0.3}
    out = squad_v2(gold, pred, na, na_prob_thresh=0.5)  # q2 and q3 become "no answer": both right
    assert out["exact"] == pytest.approx(75.0) and out["f1"] == pytest.approx(87.5)
    # Sweep by rising probability: q1 +1 (best 3 at 0.1), q4 +0 / +0.5, q3 -1, q2 0.
    assert out["best_exact"] == pytest.approx(75.0) and out["best_exact_thresh"] == 0.1
    assert out["best_f1"] == pytest.approx(87.5) and out["best_f1_thresh"] == 0.3


def test_v2_drops_gold_answers_that_normalise_to_nothing():
    assert squad_v2({"q": ["the", "."]}, {"q": ""})["exact"] == 100.0  # no real answer left: unanswerable


def test_missing_prediction_is_an_error():
    with pytest.raises(ValueError, match="no prediction"):
        squad_v1({"q": ["a"]}, {})
