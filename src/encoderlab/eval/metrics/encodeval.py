"""EncodEval's own scores for token classification, QA and retrieval (paper 1 reports these).

EncodEval (the evaluation code of paper 1, hgissbkh/EncodEval) does not score TC, QA and IR the
standard way; its evaluators' `compute_f1s` / `compute_ndcgs` average a per-example score:
  * TC, `sentence_macro_f1`: scikit-learn's macro-F1 over the tags of one sentence (the tags present
    in its gold or its predictions), averaged over sentences. A sentence of only `O` tagged only `O`
    scores 100, so this reads far higher than entity F1.
  * QA, `position_f1`: the F1 between the set of token positions tagged as in the answer and the
    gold answer's positions, an empty set counted as {0} (position 0 is never in an answer, so a
    question without an answer, or whose answer was cut off, scores 100 when nothing is tagged).
    Positions, not words: no text and no SQuAD normalisation.
  * IR, `ndcg@10_retrieved`: scikit-learn's `ndcg_score` over the 10 retrieved documents of a query
    (binary gains, tied scores averaged), so its ideal ranking holds only the relevant documents
    that were retrieved. Equal to trec_eval's `ndcg_cut_10` for a query with one relevant document,
    higher for a query with relevant documents outside its top 10.

All are in percent, as every encoderlab score. The tests check each against scikit-learn or a direct
computation; scikit-learn itself is only a test dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby

from encoderlab.eval.metrics.classification import macro_f1

RETRIEVED = 10


def sentence_macro_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """Mean over sentences of the macro-F1 of one sentence's word tags (percent)."""
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("gold and predicted tag sequences must align one to one")
    scores = [macro_f1(g, p) for g, p in zip(gold, pred) if g]
    return sum(scores) / len(scores) if scores else 0.0


def position_f1(gold: Sequence[Sequence[int]], pred: Sequence[Sequence[int]]) -> float:
    """Mean over questions of the F1 between predicted and gold answer token positions (percent)."""
    if len(gold) != len(pred):
        raise ValueError("gold and predicted positions must align one to one")
    total = 0.0
    for g, p in zip(gold, pred):
        g_set, p_set = set(g) or {0}, set(p) or {0}
        hit = len(g_set & p_set)
        total += 2 * hit / (len(g_set) + len(p_set))
    return 100.0 * total / len(gold) if gold else 0.0


def _dcg(gains_by_score: Sequence[tuple[float, int]]) -> float:
    """DCG of (score, gain) pairs ranked by score, a group of tied scores sharing its mean gain."""
    ranked = sorted(gains_by_score, key=lambda sg: -sg[0])
    dcg, rank = 0.0, 0
    for _, group in groupby(ranked, key=lambda sg: sg[0]):
        gains = [g for _, g in group]
        discounts = sum(1 / math.log2(rank + i + 2) for i in range(len(gains)))
        dcg += sum(gains) / len(gains) * discounts
        rank += len(gains)
    return dcg


def retrieved_ndcg(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> float:
    """Mean over judged queries of nDCG over their `RETRIEVED` best documents, the ideal ranking
    made of those same documents (percent); a query with none relevant among them scores 0."""
    scores = []
    for qid, relevant in qrels.items():
        top = sorted(run.get(qid, {}).items(), key=lambda ds: -ds[1])[:RETRIEVED]
        pairs = [(score, int(relevant.get(doc, 0) >= 1)) for doc, score in top]
        ideal = _dcg([(-i, g) for i, g in enumerate(sorted((g for _, g in pairs), reverse=True))])
        scores.append(_dcg(pairs) / ideal if ideal else 0.0)
    return 100.0 * sum(scores) / len(scores) if scores else 0.0
