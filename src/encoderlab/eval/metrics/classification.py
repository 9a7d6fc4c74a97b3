"""Accuracy, macro-, weighted and one class's F1 over labels (in percent); multi-label macro/micro-F1
over label sets.

Macro-F1 averages the per-class F1 over the classes present in the gold labels or the
predictions (scikit-learn's convention with `labels=None`); a class with no true positives and no
predictions does not exist for it, while a predicted-only class counts with F1 0.
"""

from __future__ import annotations

from collections.abc import Sequence


def accuracy(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Percent of positions where `pred` equals `gold`."""
    _check(gold, pred)
    return 100.0 * sum(g == p for g, p in zip(gold, pred)) / len(gold)


def macro_f1(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Unweighted mean of per-class F1 (percent)."""
    _check(gold, pred)
    scores = []
    for c in sorted(set(gold) | set(pred)):
        tp = sum(g == c and p == c for g, p in zip(gold, pred))
        n_pred = sum(p == c for p in pred)
        n_gold = sum(g == c for g in gold)
        scores.append(2 * tp / (n_pred + n_gold) if n_pred + n_gold else 0.0)
    return 100.0 * sum(scores) / len(scores)


def weighted_f1(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Per-class F1 averaged with each class weighted by its gold count (percent; scikit-learn's
    `average="weighted"`, which paper 2's code picks its best epoch by)."""
    _check(gold, pred)
    total = 0.0
    for c in set(gold):
        tp = sum(g == c and p == c for g, p in zip(gold, pred))
        n_gold = sum(g == c for g in gold)
        total += n_gold * 2 * tp / (n_gold + sum(p == c for p in pred))
    return 100.0 * total / len(gold)


def binary_f1(gold: Sequence, pred: Sequence, positive) -> float:
    """The F1 of class `positive` alone (percent): scikit-learn's `f1_score(average="binary", pos_label=
    positive)`, what GLUE reports for MRPC and QQP; 0 when the class is neither gold nor predicted
    (scikit-learn's `zero_division=0`)."""
    _check(gold, pred)
    tp = sum(g == positive and p == positive for g, p in zip(gold, pred))
    both = sum(g == positive for g in gold) + sum(p == positive for p in pred)
    return 100.0 * 2 * tp / both if both else 0.0


def multilabel_f1(gold: Sequence[set], pred: Sequence[set]) -> dict[str, float]:
    """Macro-F1 (mean of per-label F1 over the labels in gold or predictions, the convention
    above), micro-F1 (F1 of the pooled label decisions) and weighted F1 (per-label F1 weighted by the
    label's gold count) of label sets (percent)."""
    _check(gold, pred)
    per_label, tp_all, fp_all, fn_all, weighted, support = [], 0, 0, 0, 0.0, 0
    for label in sorted(set().union(*gold, *pred)):
        tp = sum(label in g and label in p for g, p in zip(gold, pred))
        fp = sum(label not in g and label in p for g, p in zip(gold, pred))
        fn = sum(label in g and label not in p for g, p in zip(gold, pred))
        per_label.append(2 * tp / (2 * tp + fp + fn))
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
        weighted, support = weighted + (tp + fn) * per_label[-1], support + tp + fn
    macro = 100.0 * sum(per_label) / len(per_label) if per_label else 100.0
    pooled = 2 * tp_all + fp_all + fn_all
    micro = 100.0 * 2 * tp_all / pooled if pooled else 100.0
    return {
        "macro_f1": macro,
        "micro_f1": micro,
        "weighted_f1": 100.0 * weighted / support if support else 0.0,
    }


def _check(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred) or not gold:
        raise ValueError(f"need equally long, non-empty label lists, got {len(gold)} and {len(pred)}")
