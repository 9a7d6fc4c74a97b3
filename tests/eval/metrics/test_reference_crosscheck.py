"""Every score against a reference computed independently here, on random inputs: scikit-learn for
accuracy, macro/weighted and multi-label F1 and sklearn's `ndcg_score` (EncodEval's retrieved nDCG); a
hand-written strict IOB2 entity extractor for entity F1; conlleval's chunks and paper 2's code (Hugging
Face `evaluate`'s seqeval) for the biomed NER F1; a re-statement of the official SQuAD v1.1 /
v2.0 normalisation and F1; trec_eval's nDCG@10 (ties by document id, descending) and recall@k."""

from __future__ import annotations

import collections
import math
import random
import re
import string

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, ndcg_score
from sklearn.preprocessing import MultiLabelBinarizer

from encoderlab.eval.metrics import (
    accuracy,
    entity_f1,
    macro_f1,
    multilabel_f1,
    retrieval_scores,
    retrieved_ndcg,
    squad_v1,
    squad_v2,
    weighted_f1,
)


def test_classification_scores_match_scikit_learn():
    """50 random cases (was 200): each of these bugs fails within them, checked by putting it in
    `classification.py`: macro-F1 over the gold classes alone, weighted-F1 weighted by predicted counts."""
    rng = random.Random(0)
    for _ in range(50):
        n, k = rng.randint(1, 30), rng.randint(1, 5)
        gold = [rng.randrange(k) for _ in range(n)]
        pred = [rng.randrange(k + 1) for _ in range(n)]  # k: a class only ever predicted
        assert accuracy(gold, pred) == pytest.approx(100 * accuracy_score(gold, pred))
        for average, ours in (("macro", macro_f1), ("weighted", weighted_f1)):
            ref = f1_score(gold, pred, average=average, zero_division=0)
            assert ours(gold, pred) == pytest.approx(100 * ref), (average, gold, pred)


def test_multilabel_scores_match_scikit_learn():
    """As paper 2's English protocol (BioClinical-ModernBERT) scores HoC: `f1_score(Y, Y_pred, average=...,
    zero_division=0)` on indicator matrices of one column per label of the task, absent labels included
    (macro-F1 was over the labels present until 2026-12-07: the matrix's columns here were those). 50 random
    cases (was 200): each of these bugs fails within them, checked by putting it in `classification.py`: a
    label neither gold nor predicted scored 1, not 0; micro-F1 without the false negatives; macro-F1 over the
    labels with a non-zero F1."""
    rng = random.Random(1)
    for _ in range(50):
        n, k = rng.randint(2, 25), rng.randint(2, 6)
        gold = [{x for x in range(k) if rng.random() < 0.3} for _ in range(n)]
        pred = [{x for x in range(k) if rng.random() < 0.3} for _ in range(n)]
        binarizer = MultiLabelBinarizer(classes=range(k))
        y, y_pred = binarizer.fit_transform(gold), binarizer.transform(pred)
        ours = multilabel_f1(gold, pred, range(k))
        for average in ("macro", "micro", "weighted"):
            ref = f1_score(y, y_pred, average=average, zero_division=0)
            assert ours[f"{average}_f1"] == pytest.approx(100 * ref), (average, gold, pred)


def test_multilabel_macro_f1_counts_a_label_neither_gold_nor_predicted():
    gold, pred = [{0}, {0, 1}], [{0}, {1}]  # label 2 of the task: in no gold set, never predicted
    y, y_pred = np.array([[1, 0, 0], [1, 1, 0]]), np.array([[1, 0, 0], [0, 1, 0]])
    ours = multilabel_f1(gold, pred, (0, 1, 2))["macro_f1"]
    assert ours == pytest.approx(100 * f1_score(y, y_pred, average="macro", zero_division=0))
    assert ours == pytest.approx(100 * (2 / 3 + 1 + 0) / 3)  # not (2/3 + 1) / 2, the labels present
    with pytest.raises(ValueError, match=r"labels \['3'\] are not among"):
        multilabel_f1(gold, [{0}, {3}], (0, 1, 2))


def strict_entities(tags: list[str]) -> set[tuple[int, int, str]]:
    """Strict IOB2: an entity is B-T followed by I-T's; an I- tag that starts nothing is no entity."""
    out, i = set(), 0
    while i < len(tags):
        if tags[i].startswith("B-"):
            kind, j = tags[i][2:], i + 1
            while j < len(tags) and tags[j] == f"I-{kind}":
                j += 1
            out.add((i, j, kind))
            i = j
        else:
            i += 1
    return out


def test_entity_f1_matches_a_strict_iob2_count():
    rng = random.Random(2)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    for _ in range(50):
        gold = [[rng.choice(tags) for _ in range(rng.randint(1, 10))] for _ in range(20)]
        pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in g] for g in gold]
        g = {(s, *e) for s, sent in enumerate(gold) for e in strict_entities(sent)}
        p = {(s, *e) for s, sent in enumerate(pred) for e in strict_entities(sent)}
        if not g or not p:
            continue
        assert entity_f1(gold, pred) == pytest.approx(100 * 2 * len(g & p) / (len(g) + len(p)))


def normalize(s: str) -> str:
    """The official scripts' normalize_answer: lower, no punctuation, no articles, single spaces."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s, flags=re.UNICODE).split())


def token_f1(gold: str, pred: str, v2: bool) -> float:
    g, p = normalize(gold).split(), normalize(pred).split()
    if v2 and (not g or not p):
        return float(g == p)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    return 0.0 if same == 0 else 2 * same / (len(g) + len(p))


WORDS = ["the", "The", "a", "An", "cat", "Cat.", "dog,", "café", "Café", "x-y", "1,000", "(b)", "thé", "“q”"]


def test_squad_scores_match_the_official_definitions():
    rng = random.Random(3)

    def text():
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))

    for _ in range(300):
        gold = {f"q{i}": [text() for _ in range(rng.randint(1, 3))] for i in range(5)}
        pred = {q: text() for q in gold}
        v1 = squad_v1(gold, pred)
        em = [max(float(normalize(a) == normalize(pred[q])) for a in answers) for q, answers in gold.items()]
        f1 = [max(token_f1(a, pred[q], False) for a in answers) for q, answers in gold.items()]
        assert (v1["exact_match"], v1["f1"]) == pytest.approx((20 * sum(em), 20 * sum(f1)))
        gold["q9"] = []  # unanswerable
        pred["q9"] = text()
        v2, em, f1 = squad_v2(gold, pred), [], []
        for q, answers in gold.items():
            scored = [a for a in answers if normalize(a)] or [""]
            em.append(max(float(normalize(a) == normalize(pred[q])) for a in scored))
            f1.append(max(token_f1(a, pred[q], True) for a in scored))
        assert (v2["exact"], v2["f1"]) == pytest.approx((100 * np.mean(em), 100 * np.mean(f1)))


def test_retrieval_scores_match_trec_eval_and_scikit_learn_with_ties():
    rng = random.Random(4)
    for _ in range(50):
        docs = [f"d{i:02d}" for i in range(rng.randint(2, 40))]
        qrels = {
            f"q{q}": {d: 1 for d in rng.sample(docs, rng.randint(1, min(5, len(docs))))} for q in range(4)
        }
        run = {q: {d: round(rng.random(), 1) for d in docs} for q in qrels}  # many tied scores
        out = retrieval_scores(qrels, run)
        ndcg, recall = [], {10: [], 100: []}
        for q, relevant in qrels.items():
            ranked = sorted(run[q], key=lambda d: (run[q][d], d), reverse=True)  # trec_eval's tie order
            dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
            ndcg.append(dcg / sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant)))))
            for k in recall:
                recall[k].append(len(set(ranked[:k]) & set(relevant)) / len(relevant))
        assert out["ndcg@10"] == pytest.approx(100 * np.mean(ndcg), abs=1e-6)
        for k, values in recall.items():
            assert out[f"recall@{k}"] == pytest.approx(100 * np.mean(values), abs=1e-6)
        # EncodEval's: scikit-learn's ndcg_score over the 10 retrieved (tied scores averaged)
        reference = []
        for q, relevant in qrels.items():
            top = sorted(run[q].items(), key=lambda ds: -ds[1])[:10]
            gains = np.array([[float(d in relevant) for d, _ in top]])
            if len(top) == 1:
                reference.append(gains[0, 0])
            else:
                reference.append(ndcg_score(gains, np.array([[s for _, s in top]])) if gains.any() else 0.0)
        assert retrieved_ndcg(qrels, run) == pytest.approx(100 * np.mean(reference), abs=1e-6)


def conlleval_chunks(tags: list[str]) -> set[tuple[int, int, str]]:
    """conlleval's chunks (seqeval's default mode): B- starts one, and so does an I- that does not
    continue a chunk of its type; O, B- or a type change ends one. A bare `B`/`I` (BLURB's untyped
    tags) is a chunk of type ''."""
    out, start, kind = set(), None, ""
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, tag_kind = tag.partition("-")
        if start is not None and (prefix in ("O", "B") or tag_kind != kind):
            out.add((start, i, kind))
            start = None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, tag_kind
    return out


def bcm_ner_f1(gold: list[list[str]], pred: list[list[str]]) -> float:
    """Paper 2's code (BCM `src/metrics/metrics.py`): Hugging Face `evaluate`'s seqeval `overall_f1`,
    which is seqeval's `classification_report(output_dict=True)["micro avg"]["f1-score"]` in its
    default mode (huggingface/evaluate `metrics/seqeval/seqeval.py`)."""
    from seqeval.metrics import classification_report

    return 100 * classification_report(gold, pred, output_dict=True, zero_division=0)["micro avg"]["f1-score"]


TRICKY = [
    ([["B-X", "I-X", "O"]], [["I-X", "I-X", "O"]], 100.0),  # an I- tag starts an entity
    ([["B-X", "B-X"]], [["B-X", "I-X"]], 0.0),  # adjacent entities of one type are two
    ([["B-X", "B-X", "O", "B-X"]], [["B-X", "B-X", "O", "O"]], 100 * 2 * 2 / 5),
    ([["B-X", "I-X"]], [["B-X", "I-Y"]], 0.0),  # a type change ends the entity, I-Y starts one
    ([["B-X", "I-Y"]], [["B-X", "B-Y"]], 100.0),
    ([["O", "I-X", "I-Y", "O"]], [["O", "B-X", "B-Y", "O"]], 100.0),
    ([["B", "I", "O", "B"]], [["I", "I", "O", "B"]], 100.0),  # BLURB's untyped O/B/I
    ([["B", "B", "I"]], [["B", "I", "I"]], 0.0),
    ([["O", "O"]], [["B-X", "O"]], 0.0),  # no gold entity: precision 0
]


@pytest.mark.parametrize(("gold", "pred", "expected"), TRICKY)
def test_conlleval_f1_is_paper2s_ner_f1_on_tricky_tags(gold, pred, expected):
    from encoderlab.eval.metrics import conlleval_f1

    assert conlleval_f1(gold, pred) == pytest.approx(expected)
    assert bcm_ner_f1(gold, pred) == pytest.approx(expected)


def test_conlleval_f1_matches_conllevals_chunks_and_paper2s_code():
    from encoderlab.eval.families import family_ops
    from encoderlab.eval.metrics import conlleval_f1
    from encoderlab.eval.tasks import TASKS

    rng = random.Random(5)
    for tags in (["O", "B-X", "I-X", "B-Y", "I-Y"], ["O", "B", "I"]):
        for _ in range(300):
            gold = [[rng.choice(tags) for _ in range(rng.randint(1, 7))] for _ in range(rng.randint(1, 5))]
            pred = [[t if rng.random() < 0.6 else rng.choice(tags) for t in g] for g in gold]
            g = {(s, *c) for s, sent in enumerate(gold) for c in conlleval_chunks(sent)}
            p = {(s, *c) for s, sent in enumerate(pred) for c in conlleval_chunks(sent)}
            direct = 100 * 2 * len(g & p) / (len(g) + len(p)) if g and p else 0.0
            assert conlleval_f1(gold, pred) == pytest.approx(direct), (gold, pred)
            assert bcm_ner_f1(gold, pred) == pytest.approx(direct), (gold, pred)
    # what a biomed NER task reports: BLURB's O/B/I tags, scored as paper 2's code scores them
    task, tags = TASKS["biomed-jnlpba"], ["O", "B", "I"]
    gold = [[rng.choice(tags) for _ in range(8)] for _ in range(40)]
    pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
    predictions = [{"i": i, "gold": g, "pred": p} for i, (g, p) in enumerate(zip(gold, pred))]
    scores = family_ops(task).metrics(task, predictions)
    assert task.metric == "conlleval_f1" and scores["conlleval_f1"] == pytest.approx(bcm_ner_f1(gold, pred))
