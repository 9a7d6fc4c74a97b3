"""Running a fine-tuned module over tokenised examples: padded inputs on the module's device, and
prediction in length-sorted batches (much less padding on CPU) with results put back in order.
Shared by every task family (`families.py`, `answer_tagger.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from encoderlab.eval.features import IGNORE, pad_batch
from encoderlab.eval.spec import EVAL_BATCH


@dataclass
class Prepared:
    """Tokenised splits of one task (shared by every node of its grid)."""

    train: Sequence[dict]
    """Training examples, as dicts when read (`tokenids.CompactFeatures`)."""
    val: Any
    tests: dict[str, Any]


def segments(features: Sequence[dict]) -> list[list[int]] | None:
    """The `segment_ids` of each feature (the tokenizer's `token_type_ids` of a text pair, `qa.py`), or
    None when any feature has none (a tokenizer that gives none, a single-text family)."""
    if not features or any("segment_ids" not in f for f in features):
        return None
    return [f["segment_ids"] for f in features]


def model_inputs(
    module: nn.Module, seqs: Sequence[Sequence[int]], segment_ids: Sequence[Sequence[int]] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(ids, mask, segment ids or None) of `seqs`, right-padded (segments with 0, as transformers'
    collators pad `token_type_ids`), on the device of `module`: a head's positional arguments."""
    ids, mask = pad_batch(seqs)
    dev = next(module.parameters()).device
    segs = None if segment_ids is None else pad_batch(segment_ids)[0].to(dev)
    return ids.to(dev), mask.to(dev), segs


def predict_rows(
    module: nn.Module,
    seqs: Sequence[Sequence[int]],
    per_row: Callable[[Any, int, int], Any],
    segment_ids: Sequence[Sequence[int]] | None = None,
) -> list:
    """Run `module` over `seqs` (and their `segment_ids`, when given) in length-sorted batches;
    `per_row(output, row, length)` extracts one result."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out: list = [None] * len(seqs)
    for start in range(0, len(order), EVAL_BATCH):
        chunk = order[start : start + EVAL_BATCH]
        segs = None if segment_ids is None else [segment_ids[i] for i in chunk]
        output = module(*model_inputs(module, [seqs[i] for i in chunk], segs))
        for row, i in enumerate(chunk):
            out[i] = per_row(output, row, len(seqs[i]))
    return out


def token_loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
    """Cross-entropy of per-token logits against each feature's `labels` (IGNORE positions left out).

    A micro-batch without a labelled position (words that tokenise to nothing, such as zero-width
    characters, or a micro-batch of one such sentence) has a loss of 0: cross-entropy's mean over no
    position is NaN, whose gradient turned every weight into NaN for the rest of the run."""
    logits = module(*model_inputs(module, [f["input_ids"] for f in micro], segments(micro)))
    labels, _ = pad_batch([f["labels"] for f in micro], fill=IGNORE)
    if not (labels != IGNORE).any():
        return logits.float().sum() * 0.0
    return F.cross_entropy(
        logits.float().flatten(0, 1), labels.to(logits.device).flatten(), ignore_index=IGNORE
    )
