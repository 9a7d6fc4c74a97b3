"""Entity-level F1 with seqeval, in strict IOB2 mode or in its default (conlleval's) mode.

seqeval's default mode is lenient, as conlleval is (gold `B-PER I-PER` vs predicted `I-PER I-PER`
scores 1.0: an `I-` tag may start an entity); the strict IOB2 mode counts an entity only when its B-
tag starts it and type and span match. Strict is encoderlab's default; the lenient score is what
Hugging Face's `evaluate` seqeval reports as `overall_f1`, which paper 2's code (BioClinical-ModernBERT)
selects and reports by. The settings are returned with the score so results files record them.
"""

from __future__ import annotations

from collections.abc import Sequence

SEQEVAL_SETTINGS = {"library": "seqeval", "mode": "strict", "scheme": "IOB2", "average": "micro"}


def non_iob_tag(tags: Sequence[str]) -> str | None:
    """The first tag that is not `O`, `B-TYPE` or `I-TYPE` (entity F1 is undefined over it), or None."""
    return next((t for t in tags if t != "O" and t[:2] not in ("B-", "I-")), None)


def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """Micro entity F1 (percent) over sentences of string tags."""
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("gold and predicted tag sequences must align one to one")
    from seqeval.metrics import (
        f1_score,
    )  # with scikit-learn: imported when a score is taken, not by `study list`
    from seqeval.scheme import IOB2

    return 100.0 * float(f1_score(list(map(list, gold)), list(map(list, pred)), mode="strict", scheme=IOB2))


CONLLEVAL_SETTINGS = {"library": "seqeval", "mode": "default (conlleval)", "average": "micro"}


def conlleval_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """Micro entity F1 (percent) in seqeval's default, lenient mode (Hugging Face `evaluate`'s seqeval)."""
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("gold and predicted tag sequences must align one to one")
    from seqeval.metrics import f1_score

    return 100.0 * float(f1_score(list(map(list, gold)), list(map(list, pred))))
