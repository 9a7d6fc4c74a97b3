"""Accuracy and macro-F1 over integer labels (in percent).

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


def _check(gold: Sequence[int], pred: Sequence[int]) -> None:
    if len(gold) != len(pred) or not gold:
        raise ValueError(f"need equally long, non-empty label lists, got {len(gold)} and {len(pred)}")
