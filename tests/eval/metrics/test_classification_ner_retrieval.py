"""Accuracy, macro-F1, strict-IOB2 entity F1 and nDCG@10 against direct computations."""

from __future__ import annotations

import math
import random

import pytest

from encoderlab.eval.metrics import SEQEVAL_SETTINGS, accuracy, entity_f1, macro_f1, retrieval_scores


def test_accuracy_and_macro_f1_by_hand():
    gold, pred = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert accuracy(gold, pred) == pytest.approx(60.0)
    # per class F1 = 2tp / (pred + gold): class 0 2/4, class 1 4/5, class 2 0/1
    assert macro_f1(gold, pred) == pytest.approx(100 * (0.5 + 0.8 + 0.0) / 3)


def test_macro_f1_matches_a_confusion_count_on_random_labels():
    rng = random.Random(0)
    gold = [rng.randrange(4) for _ in range(200)]
    pred = [g if rng.random() < 0.6 else rng.randrange(4) for g in gold]
    f1s = []
    for c in range(4):
        tp = sum(g == p == c for g, p in zip(gold, pred))
        fp = sum(p == c != g for g, p in zip(gold, pred))
        fn = sum(g == c != p for g, p in zip(gold, pred))
        precision, recall = tp / (tp + fp), tp / (tp + fn)
        f1s.append(2 * precision * recall / (precision + recall))
    assert macro_f1(gold, pred) == pytest.approx(100 * sum(f1s) / 4)


def test_entity_f1_is_strict_iob2():
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    assert entity_f1(gold, [["B-PER", "I-PER", "O", "O"]]) == pytest.approx(100 * 2 / 3)  # P 1, R 1/2
    # lenient seqeval would score this 100: an entity must start with B- in strict IOB2
    assert entity_f1([["B-PER", "I-PER"]], [["I-PER", "I-PER"]]) == 0.0
    assert SEQEVAL_SETTINGS["mode"] == "strict" and SEQEVAL_SETTINGS["scheme"] == "IOB2"


def own_ndcg_at_10(qrels: dict, run: dict) -> float:
    """trec_eval ndcg_cut_10: gain = grade, discount log2(rank + 1), ties by doc id descending."""
    total = 0.0
    for qid, judged in qrels.items():
        ranked = sorted(run[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:10]
        dcg = sum(judged.get(doc, 0) / math.log2(i + 2) for i, (doc, _) in enumerate(ranked))
        ideal = sorted(judged.values(), reverse=True)[:10]
        total += dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return 100 * total / len(qrels)


def test_ndcg_matches_an_own_implementation_and_recall_by_hand():
    rng = random.Random(1)
    docs = [f"d{i}" for i in range(30)]
    qrels = {f"q{q}": {d: rng.choice([1, 2, 3]) for d in rng.sample(docs, 3)} for q in range(20)}
    run = {q: {d: rng.random() for d in docs} for q in qrels}
    out = retrieval_scores(qrels, run)
    assert out["ndcg@10"] == pytest.approx(own_ndcg_at_10(qrels, run), abs=1e-6)
    top10 = {q: set(sorted(r, key=r.get, reverse=True)[:10]) for q, r in run.items()}
    recall = sum(len(top10[q] & set(j)) / len(j) for q, j in qrels.items()) / len(qrels)
    assert out["recall@10"] == pytest.approx(100 * recall)
    assert out["recall@100"] == pytest.approx(100.0)  # the whole corpus is ranked


def test_a_query_without_ranking_is_an_error():
    with pytest.raises(ValueError, match="no ranking"):
        retrieval_scores({"q": {"d": 1}}, {})


def test_conlleval_f1_is_seqevals_default_mode_and_lets_an_i_tag_start_an_entity():
    from seqeval.metrics import f1_score

    from encoderlab.eval.metrics import conlleval_f1

    gold, pred = [["B-PER", "I-PER", "O"]], [["I-PER", "I-PER", "O"]]
    assert conlleval_f1(gold, pred) == 100.0 and entity_f1(gold, pred) == 0.0
    rng = random.Random(4)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 9))] for _ in range(200)]
    pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in g] for g in gold]
    assert conlleval_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred))
