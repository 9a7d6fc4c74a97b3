"""EncodEval's per-example scores against scikit-learn (the library EncodEval calls) and by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.metrics import f1_score, ndcg_score

from encoderlab.eval.metrics import position_f1, retrieval_scores, retrieved_ndcg, sentence_macro_f1

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_sentence_macro_f1_is_sklearns_macro_f1_per_sentence_averaged():
    rng = random.Random(0)
    gold, pred = [], []
    for _ in range(300):
        n = rng.randint(1, 12)
        g = [rng.choice(TAGS[: rng.randint(1, 5)]) for _ in range(n)]
        gold.append(g)
        pred.append([t if rng.random() < 0.7 else rng.choice(TAGS) for t in g])
    reference = np.mean([f1_score(g, p, average="macro", zero_division=0) for g, p in zip(gold, pred)])
    assert sentence_macro_f1(gold, pred) == pytest.approx(100 * reference)


def test_sentence_macro_f1_by_hand():
    # a sentence of only O tagged only O scores 1; the second: O 2*1/(2+1), B-PER 2*1/(1+2)
    assert sentence_macro_f1([["O", "O"], ["O", "B-PER"]], [["O", "O"], ["B-PER", "B-PER"]]) == pytest.approx(
        100 * (1 + (0 + 2 / 3) / 2) / 2
    )
    with pytest.raises(ValueError, match="align"):
        sentence_macro_f1([["O"]], [["O", "O"]])


def _encodeval_position_f1(gold, pred) -> float:
    """A restatement of EncodEval's QuestionAnsweringEval.compute_f1s (precision and recall, then F1)."""
    scores = []
    for g, p in zip(gold, pred):
        g, p = set(g) or {0}, set(p) or {0}
        precision, recall = len(p & g) / len(p), len(p & g) / len(g)
        scores.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return 100 * float(np.mean(scores))


def test_position_f1_by_hand_and_against_encodevals_definition():
    # exact; half the gold found; nothing tagged for an unanswerable question ({0} vs {0}); a tag
    # where there is no answer ({0} vs {5}): 0
    gold, pred = [[3, 4], [3, 4], [], []], [[3, 4], [3], [], [5]]
    assert position_f1(gold, pred) == pytest.approx(100 * (1 + 2 / 3 + 1 + 0) / 4)
    rng = random.Random(1)
    gold = [sorted(rng.sample(range(1, 30), rng.randint(0, 5))) for _ in range(500)]
    pred = [sorted(rng.sample(range(0, 30), rng.randint(0, 6))) for _ in range(500)]
    assert position_f1(gold, pred) == pytest.approx(_encodeval_position_f1(gold, pred))


def _encodeval_ndcg(qrels, run) -> float:
    """EncodEval's RetrievalEval: sklearn's ndcg_score over each query's 10 best documents."""
    scores = []
    for qid, relevant in qrels.items():
        top = sorted(run[qid], key=run[qid].get)[-10:]
        true = [int(relevant.get(d, 0) >= 1) for d in top]
        scores.append(ndcg_score([true], [[run[qid][d] for d in top]]))
    return 100 * float(np.mean(scores))


def test_retrieved_ndcg_is_sklearns_ndcg_over_the_retrieved_ten_with_ties_and_misses():
    rng = random.Random(2)
    docs = [f"d{i}" for i in range(40)]
    qrels = {f"q{q}": {d: rng.choice([1, 2]) for d in rng.sample(docs, rng.randint(1, 6))} for q in range(60)}
    # scores on a coarse grid, so many documents tie; some queries retrieve no relevant document
    run = {q: {d: rng.randint(0, 8) / 8 for d in docs} for q in qrels}
    # ties across the 10th place make "the 10 best" ambiguous; keep the cut clean
    for scores in run.values():
        ranked = sorted(scores, key=scores.get, reverse=True)
        scores.update({d: scores[d] - 1 for d in ranked[10:] if scores[d] == scores[ranked[9]]})
    assert retrieved_ndcg(qrels, run) == pytest.approx(_encodeval_ndcg(qrels, run))


def test_retrieved_ndcg_equals_trec_evals_for_one_relevant_document_and_exceeds_it_otherwise():
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(30)]
    one = {f"q{q}": {rng.choice(docs): 1} for q in range(30)}
    run = {q: {d: rng.random() for d in docs} for q in one}
    assert retrieved_ndcg(one, run) == pytest.approx(retrieval_scores(one, run)["ndcg@10"])
    # two relevant documents, one ranked 3rd and one out of the top 10: trec_eval's ideal holds both
    qrels = {"q": {"a": 1, "z": 1}}
    ranked = {"q": {**{f"x{i}": 1 - i / 100 for i in range(10)}, "a": 0.985, "z": 0.0}}
    assert retrieved_ndcg(qrels, ranked) == pytest.approx(100.0 * (1 / np.log2(4)) / 1.0)
    assert retrieval_scores(qrels, ranked)["ndcg@10"] < retrieved_ndcg(qrels, ranked)
