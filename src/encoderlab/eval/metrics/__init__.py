"""Scoring functions for the four task families.

Where a well-kept library defines the metric we call it (seqeval for entity F1, ir-measures over
pytrec-eval-terrier for nDCG@10); where the official definition is a script that no longer ships
offline (SQuAD v1.1/v2.0) we port it and pin it with hand-computed tests; EncodEval's own per-example
scores, which paper 1 reports, are in `encodeval.py`. Every function returns
plain floats in [0, 100] so results files read the same across families (correlations in [-100, 100],
and a regression's mean squared error in the target's units).
"""

from encoderlab.eval.metrics.classification import accuracy, binary_f1, macro_f1, multilabel_f1, weighted_f1
from encoderlab.eval.metrics.encodeval import position_f1, retrieved_ndcg, sentence_macro_f1
from encoderlab.eval.metrics.ner import (
    CONLLEVAL_SETTINGS,
    SEQEVAL_SETTINGS,
    conlleval_f1,
    entity_f1,
    non_iob_tag,
)
from encoderlab.eval.metrics.regression import correlations
from encoderlab.eval.metrics.retrieval import retrieval_scores
from encoderlab.eval.metrics.squad import squad_v1, squad_v2

__all__ = [
    "CONLLEVAL_SETTINGS",
    "conlleval_f1",
    "correlations",
    "SEQEVAL_SETTINGS",
    "accuracy",
    "entity_f1",
    "binary_f1",
    "macro_f1",
    "multilabel_f1",
    "non_iob_tag",
    "position_f1",
    "retrieval_scores",
    "retrieved_ndcg",
    "sentence_macro_f1",
    "squad_v1",
    "squad_v2",
    "weighted_f1",
]
