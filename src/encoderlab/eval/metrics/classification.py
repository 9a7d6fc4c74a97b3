"""Accuracy, macro-, weighted and one class's F1 over labels (in percent); multi-label macro/micro-F1
over label sets.

Macro-F1 of one label per example averages the per-class F1 over the classes present in the gold labels
or the predictions (scikit-learn's convention with `labels=None`); a class with no true positives and no
predictions does not exist for it, while a predicted-only class counts with F1 0.

Multi-label scores are scikit-learn's `f1_score(Y, Y_pred, average=..., zero_division=0)` on indicator
matrices with one column per label of the task, what paper 2's English protocol computes for HoC
(BioClinical-ModernBERT's `compute_metrics_multi_label_classification`: weighted and micro, on the
`(logits > 0)` matrix of every output column). So macro-F1 averages over every label of the task: a label
neither gold nor predicted in the split scores 0 and counts (until 2026-12-07 it was left out, the
single-label convention above, which read 10 labels with one absent as 9). Micro- and weighted F1 are the
same either way but for a split with no label at all, gold or predicted: 0, as zero_division=0 gives
(micro-F1 was 100 there). The trade-off: a split too small to hold every label is marked down for
labels it cannot show; that is scikit-learn's and the paper's reading, and micro- and weighted F1 are not.
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


def multilabel_f1(gold: Sequence[set], pred: Sequence[set], labels: Sequence) -> dict[str, float]:
    """Macro-F1 (mean of per-label F1 over every one of `labels`, the task's: 0 for a label neither gold
    nor predicted), micro-F1 (F1 of the pooled label decisions) and weighted F1 (per-label F1 weighted by
    the label's gold count) of label sets (percent), as the module docstring says."""
    _check(gold, pred)
    if not labels:
        raise ValueError("multi-label scores need the task's labels (one column each)")
    per_label, tp_all, fp_all, fn_all, weighted, support = [], 0, 0, 0, 0.0, 0
    for label in labels:
        tp = sum(label in g and label in p for g, p in zip(gold, pred))
        fp = sum(label not in g and label in p for g, p in zip(gold, pred))
        fn = sum(label in g and label not in p for g, p in zip(gold, pred))
        per_label.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)  # zero_division=0
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
        weighted, support = weighted + (tp + fn) * per_label[-1], support + tp + fn
    if unknown := set().union(*gold, *pred) - set(labels):  # a column the matrix lacks: no score of ours
        raise ValueError(f"labels {sorted(map(str, unknown))} are not among the task's {list(labels)}")
    pooled = 2 * tp_all + fp_all + fn_all
    return {
        "macro_f1": 100.0 * sum(per_label) / len(per_label),
        "micro_f1": 100.0 * 2 * tp_all / pooled if pooled else 0.0,
        "weighted_f1": 100.0 * weighted / support if support else 0.0,
    }


def _check(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred) or not gold:
        raise ValueError(f"need equally long, non-empty label lists, got {len(gold)} and {len(pred)}")
