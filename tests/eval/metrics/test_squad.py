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
    # No answer survives normalisation, so "" is the gold to match (the question still counts as answerable).
    assert squad_v2({"q": ["the", "."]}, {"q": ""})["exact"] == 100.0


def test_missing_prediction_is_an_error():
    with pytest.raises(ValueError, match="no prediction"):
        squad_v1({"q": ["a"]}, {})


# The official SQuAD v2.0 evaluation script (evaluate-v2.0.py, https://rajpurkar.github.io/SQuAD-explorer/,
# functions make_qid_to_has_ans, get_raw_scores, apply_no_ans_threshold, make_eval_dict), restated
# here on {qid: [gold texts]} so that the port is checked against the script's own rules.
def _official_v2(gold, pred, na_probs, thresh):
    has_ans = {q: bool(answers) for q, answers in gold.items()}  # make_qid_to_has_ans
    exact, f1 = {}, {}
    for q, answers in gold.items():  # get_raw_scores
        golds = [a for a in answers if normalize_answer(a)] or [""]
        exact[q] = max(float(normalize_answer(a) == normalize_answer(pred[q])) for a in golds)
        f1[q] = max(token_f1(a, pred[q], v2=True) for a in golds)
    for scores in (exact, f1):  # apply_no_ans_threshold
        for q in scores:
            if na_probs[q] > thresh:
                scores[q] = float(not has_ans[q])
    out = {"exact": 100.0 * sum(exact.values()) / len(exact), "f1": 100.0 * sum(f1.values()) / len(f1)}
    for name, keep in (("HasAns", True), ("NoAns", False)):
        ids = [q for q in gold if has_ans[q] is keep]
        if ids:
            out[f"{name}_total"] = float(len(ids))
            out[f"{name}_exact"] = 100.0 * sum(exact[q] for q in ids) / len(ids)
            out[f"{name}_f1"] = 100.0 * sum(f1[q] for q in ids) / len(ids)
    return out


def test_v2_has_answer_is_decided_as_the_official_script_does():
    # A question whose only gold answer is "the" has an answer (bool(answers)), though it
    # normalises to nothing: it counts under HasAns, and "no answer" there is scored 0 by threshold.
    gold, pred = {"q": ["the"], "r": []}, {"q": "", "r": ""}
    out = squad_v2(gold, pred)
    assert out["HasAns_total"] == 1 and out["NoAns_total"] == 1
    assert out == pytest.approx({**out, **_official_v2(gold, pred, {"q": 0.0, "r": 0.0}, 1.0)})
    out = squad_v2(gold, pred, {"q": 0.9, "r": 0.9}, na_prob_thresh=0.5)
    assert out["HasAns_exact"] == 0.0 and out["exact"] == 50.0


def test_v2_matches_the_official_script_on_random_cases():
    import random

    rng = random.Random(0)
    words = ["the", "a", "an", "cat", "dog", "Paris", ".", "red car", ""]
    for _ in range(200):
        n = rng.randint(1, 6)
        gold = {f"q{i}": [rng.choice(words) for _ in range(rng.randint(0, 3))] for i in range(n)}
        pred = {q: rng.choice(words) for q in gold}
        na = {q: rng.random() for q in gold}
        thresh = rng.random()
        ours = squad_v2(gold, pred, na, na_prob_thresh=thresh)
        official = _official_v2(gold, pred, na, thresh)
        assert {k: ours[k] for k in official} == pytest.approx(official)
        assert ("NoAns_total" in ours) == ("NoAns_total" in official)
