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

EVAL_BATCH = 64


@dataclass
class Prepared:
    """Tokenised splits of one task (shared by every node of its grid)."""

    train: list[dict]
    val: Any
    tests: dict[str, Any]


def model_inputs(module: nn.Module, seqs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask) of `seqs`, right-padded, on the device of `module`."""
    ids, mask = pad_batch(seqs)
    dev = next(module.parameters()).device
    return ids.to(dev), mask.to(dev)


def predict_rows(
    module: nn.Module, seqs: Sequence[Sequence[int]], per_row: Callable[[Any, int, int], Any]
) -> list:
    """Run `module` over `seqs` in length-sorted batches; `per_row(output, row, length)` extracts one result."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out: list = [None] * len(seqs)
    for start in range(0, len(order), EVAL_BATCH):
        chunk = order[start : start + EVAL_BATCH]
        output = module(*model_inputs(module, [seqs[i] for i in chunk]))
        for row, i in enumerate(chunk):
            out[i] = per_row(output, row, len(seqs[i]))
    return out


def token_loss(module: nn.Module, micro: Sequence[dict]) -> torch.Tensor:
    """Cross-entropy of per-token logits against each feature's `labels` (IGNORE positions left out).

    A micro-batch without a labelled position (words that tokenise to nothing, such as zero-width
    characters, or a micro-batch of one such sentence) has a loss of 0: cross-entropy's mean over no
    position is NaN, whose gradient turned every weight into NaN for the rest of the run."""
    logits = module(*model_inputs(module, [f["input_ids"] for f in micro]))
    labels, _ = pad_batch([f["labels"] for f in micro], fill=IGNORE)
    if not (labels != IGNORE).any():
        return logits.float().sum() * 0.0
    return F.cross_entropy(
        logits.float().flatten(0, 1), labels.to(logits.device).flatten(), ignore_index=IGNORE
    )
