"""Masked language modelling: predict selected tokens from both sides.

Selection is an **exact count per row**: round(mask_ratio x number of maskable positions), drawn
uniformly without replacement. Compared with the Bernoulli draw of HF's collator and Optimus, the
number of targets (hence the loss's weight per row) no longer fluctuates; the marginal probability
of a position being selected is the same. Special tokens (`spec.special_ids`: BOS, EOS, padding,
the mask token itself...) are never selected.

Replacement policy: `mask` puts the mask token at every selected position (paper 1, Optimus
default `mask_probability=1.0`); `80-10-10` is BERT's: 80% mask token, 10% a uniformly random
non-special token, 10% unchanged. Both draw from the generator the trainer seeds per
(seed, step, slot), so masks are reproducible and independent of the process layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from encoderlab.data.batch import PackedBatch, TokenSpec
from encoderlab.errors import UserError
from encoderlab.objectives.base import IGNORE, ObjectiveInputs


@dataclass(frozen=True, kw_only=True)
class MLM:
    """Masked language modelling with a bidirectional mask."""

    type_tag: ClassVar[str] = "mlm"

    mask_ratio: float = 0.40
    """Fraction of non-special positions selected per row (paper 1 default 0.40)."""
    replacement: Literal["mask", "80-10-10"] = "mask"
    """`mask`: all selected positions become the mask token; `80-10-10`: BERT's split."""

    def __post_init__(self) -> None:
        if not 0.0 < self.mask_ratio < 1.0:
            raise UserError(f"mlm mask_ratio must be between 0 and 1 (exclusive), got {self.mask_ratio}")

    @property
    def tag(self) -> str:
        """Short name used in metrics and run names, e.g. `mlm40`."""
        return f"mlm{round(self.mask_ratio * 100)}"

    def check(self, spec: TokenSpec) -> None:
        """Refuse a vocabulary without a mask token."""
        if spec.mask_id is None:
            raise UserError(
                "MLM needs a mask token but the tokenizer has none; train or pick a tokenizer with a "
                "mask token (e.g. '[MASK]' or '<|mask|>'), or use the clm objective"
            )

    def select(self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator) -> torch.Tensor:
        """(B, T) bool: the positions to predict, exactly round(ratio x maskable) per row."""
        ids = batch.input_ids
        maskable = ~torch.isin(ids, torch.tensor(spec.special_ids, dtype=ids.dtype))
        k = torch.round(maskable.sum(1).double() * self.mask_ratio).long()  # (B,)
        # Random scores, special positions pushed past every real score, then keep the k smallest.
        scores = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
        scores = torch.where(maskable, scores, 2.0)
        ranks = scores.argsort(dim=1).argsort(dim=1)
        return ranks < k[:, None]

    def prepare(self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator) -> ObjectiveInputs:
        """Masked inputs, bidirectional attention, targets = original ids at selected positions."""
        self.check(spec)
        ids = batch.input_ids
        selected = self.select(batch, spec, generator)
        targets = torch.where(selected, ids, IGNORE)
        inputs = torch.where(selected, spec.mask_id, ids)
        if self.replacement == "80-10-10":
            u = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
            ordinary = _ordinary_ids(spec)
            random_ids = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]
            inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)
            inputs = torch.where(selected & (u >= 0.9), ids, inputs)
        return ObjectiveInputs(
            input_ids=inputs,
            position_ids=batch.position_ids,
            doc_ids=batch.doc_ids,
            attention_mode="bidirectional",
            targets=targets,
        )


def _ordinary_ids(spec: TokenSpec) -> torch.Tensor:
    """Every id that is not special: the pool for 80/10/10 random replacements."""
    keep = torch.ones(spec.vocab_size, dtype=torch.bool)
    keep[list(spec.special_ids)] = False
    return keep.nonzero().squeeze(1)
