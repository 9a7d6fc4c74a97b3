"""Entity-level F1 with seqeval in strict IOB2 mode.

seqeval's default mode is lenient (gold `B-PER I-PER` vs predicted `I-PER I-PER` scores 1.0); the
strict IOB2 mode counts an entity only when its B- tag starts it and type and span match, which is
CoNLL's definition. The settings are returned with the score so results files record them.
"""

from __future__ import annotations

from collections.abc import Sequence

from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

SEQEVAL_SETTINGS = {"library": "seqeval", "mode": "strict", "scheme": "IOB2", "average": "micro"}


def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """Micro entity F1 (percent) over sentences of string tags."""
    if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
        raise ValueError("gold and predicted tag sequences must align one to one")
    return 100.0 * float(f1_score(list(map(list, gold)), list(map(list, pred)), mode="strict", scheme=IOB2))
