"""Negative relevance grades (TREC's -2 for spam, -1 for pooled but not judged), which BEIR's qrels reader
takes: not relevant, as trec_eval scores them, and never handed to pytrec_eval, which crashed the process
(a segmentation fault, no message) on a query judged only below -1 beside another query."""

from __future__ import annotations

import random

import ir_measures
import pytest
from ir_measures import R, nDCG

from encoderlab.eval.metrics import retrieval, retrieval_scores


def test_pytrec_eval_is_handed_no_negative_grade(monkeypatch):
    handed = []
    real = ir_measures.calc_aggregate

    def spy(measures, qrels, run):  # a negative grade is not passed on: this one crashed the real call
        handed.append(qrels)
        assert min(g for ds in qrels.values() for g in ds.values()) >= 0, qrels
        return real(measures, qrels, run)

    monkeypatch.setattr(retrieval.ir_measures, "calc_aggregate", spy)
    qrels = {"q": {"a": 0, "b": 1, "c": 2}, "r": {"a": -2}}  # crashed pytrec-eval-terrier 0.5.11
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}, "r": {"a": 1.0, "b": 2.0}}
    scores = retrieval_scores(qrels, run)
    assert handed and scores == retrieval_scores({**qrels, "r": {"a": 0}}, run)


def test_a_negative_grade_scores_as_pytrec_eval_scores_it_where_it_runs():
    # -1 never crashed pytrec_eval: on it, ours must be what pytrec_eval scores (trec_eval's reading)
    rng = random.Random(0)
    docs = [f"d{i}" for i in range(12)]
    measures = [nDCG @ 10, R @ 10, R @ 100]
    for _ in range(40):
        qrels = {
            f"q{q}": {d: rng.choice([-1, 0, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))}
            for q in range(rng.randint(1, 3))
        }
        run = {q: {d: rng.random() for d in rng.sample(docs, rng.randint(1, 12))} for q in qrels}
        reference = ir_measures.calc_aggregate(measures, qrels, run)
        ours = retrieval_scores(qrels, run)
        assert [ours[k] for k in ("ndcg@10", "recall@10", "recall@100")] == pytest.approx(
            [100 * reference[m] for m in measures]
        )
